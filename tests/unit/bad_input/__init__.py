"""The bad-input suite: one table-driven file per class of hostile input, each row asserting the documented error
(message and exit code or HTTP status), no traceback, no secret in any output, and nothing lost.

- test_http_requests.py: hostile HTTP requests against the one HTTP stack (malformed request line, headers and
  Content-Length, a request dripped past its deadline, connections past the cap, writes without a login); the
  same requests against every command's listener run in tests/integration/app/test_listeners.py.
- test_config_inputs.py: hostile config files (YAML alias bombs, recursive aliases, deep nesting, `inf` and `nan`,
  empty passwords, oversized files) and the exit code `check` gives them.
- test_slo_expressions.py: SLO expressions outside the allow-list (`reflect`, `java_method`, UDFs, subqueries).
- test_secrets.py: a planted secret never shown by any output surface.
- test_spool_and_manifest.py: hostile spool files and compaction manifests (names outside the directory,
  malformed manifests, deep JSON lines, symlinks).

`scripts/setup.sh` leaving a running host service alone is shown by tests/integration/devstack/test_setup_script.py.
"""

"""The status page: `board` refreshes the state in the background (the check's sections and the in-process
components), `document` turns it into `/api/status` (pure), `routes` serves that and the page's static assets."""

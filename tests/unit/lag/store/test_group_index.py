"""The group name index (lag/store/group_index.py) against a dict, the structure it replaced in the store (#15: a group
of one partition within 300 B): the same answers through growth, removals, reused ids and deleted slots taken
again, and the store's readers of every group see the ids in name order."""

from __future__ import annotations

import random

import numpy as np
import pytest

from lag.store.group_index import HOT_GROUPS, GroupIndex
from lag.store.offsets import OffsetStore


def check(index: GroupIndex, model: dict[str, int], absent: list[str]) -> None:
    assert len(index) == len(model)
    for name, gid in model.items():
        assert index.get(name) == gid, name
    for name in absent:
        assert index.get(name) is None, name
    assert index.ids().tolist() == sorted(model.values())


@pytest.mark.parametrize("hot_size", [HOT_GROUPS, 3], ids=["default-recent-finds", "recent-finds-emptied-often"])
def test_the_index_answers_as_a_dict_through_growth_and_removals(hot_size: int) -> None:
    rng = random.Random(15)
    names: list[str | None] = []
    free: list[int] = []
    index, model = GroupIndex(names, hot_size), dict[str, int]()
    gone: list[str] = []
    for step in range(20_000):
        if model and rng.random() < 0.3:  # remove one: its slot is marked deleted, its id reused
            name = rng.choice(list(model))
            gid = model.pop(name)
            assert index.remove(name) == gid
            assert index.remove(name) is None
            names[gid] = None
            free.append(gid)
            gone.append(name)
        else:
            name = f"g{rng.randrange(10**9)}"
            if name in model:
                continue
            gid = free.pop() if free else len(names)
            if gid == len(names):
                names.append(name)
            else:
                names[gid] = name
            index.add(name, gid)
            model[name] = gid
        if step % 997 == 0:
            check(index, model, [n for n in gone[-50:] if n not in model] + ["never"])
    check(index, model, [n for n in gone if n not in model])


def test_names_that_share_a_slot_are_told_apart_by_the_names_list() -> None:
    """Eight slots, many names: every probe walks past others' ids and deleted slots."""
    names: list[str | None] = [f"n{i}" for i in range(3)]
    index = GroupIndex(names)
    for gid, name in enumerate(names):
        assert name is not None
        index.add(name, gid)
    assert index.remove("n1") == 1
    assert [index.get(n) for n in ("n0", "n1", "n2")] == [0, None, 2]
    names[1] = "n1-again"
    index.add("n1-again", 1)
    assert [index.get(n) for n in ("n0", "n1", "n1-again", "n2")] == [0, None, 1, 2]


def test_a_group_found_again_pays_no_probe_of_the_table() -> None:
    """#27: a group committing again, the common case, is answered from the recent finds; past their bound the dict
    starts a new generation, so a million groups still cost their table slots only."""
    names: list[str | None] = [f"g{i}" for i in range(10)]
    index = GroupIndex(names, hot_size=4)
    for gid, name in enumerate(names):
        index.add(name or "", gid)
    assert index.probes == 0
    assert index.get("g9") == 9 and index.probes == 0  # added last: still among the recent finds
    assert index.get("g0") == 0 and index.probes == 1  # emptied since: found by a walk, then remembered
    assert [index.get("g0") for _ in range(3)] == [0, 0, 0] and index.probes == 1
    assert index.get("absent") is None and index.probes == 2
    assert index.remove("g0") == 0
    names[0] = None
    assert index.get("g0") is None  # a removed group is no longer found through the recent finds


def test_a_reused_id_is_found_under_its_new_name_only() -> None:
    names: list[str | None] = ["old"]
    index = GroupIndex(names)
    index.add("old", 0)
    assert index.get("old") == 0
    assert index.remove("old") == 0
    names[0] = "new"
    index.add("new", 0)
    assert (index.get("old"), index.get("new")) == (None, 0)


def test_the_store_lists_every_group_in_name_order_with_its_id() -> None:
    store = OffsetStore(intervals=3)
    store.add_hwm("c", "t", 0, 100, 1000)
    store.add_hwm("other", "t", 0, 100, 1000)
    rng = random.Random(3)
    groups = [f"g{i:04d}" for i in range(3000)]
    rng.shuffle(groups)
    for i, group in enumerate(groups):
        store.add_commit("c", group, "t", 0, 10, 1000 + i, 1000 + i)
    store.add_commit("other", groups[0], "t", 0, 10, 1000, 1000)  # the same name in another cluster: its own id
    for group in groups[::3]:
        store.delete_group("c", group)
    names, ids = store.sorted_groups("c")
    assert names == sorted(groups[i] for i in range(len(groups)) if i % 3)
    assert names == store.groups("c")
    assert ids.dtype == np.int64
    assert [store.group_name(g) for g in ids.tolist()] == names
    assert ids.tolist() == [store.group_id("c", n) for n in names]
    assert store.group_id("other", groups[0]) not in ids.tolist()
    assert store.group_id("c", groups[0]) is None
    assert store.sorted_groups("nowhere")[0] == []
    assert store.group_count() == len(names) + 1


def test_expired_groups_are_purged_from_the_index() -> None:
    store = OffsetStore(intervals=3, expire_group_ms=1000)
    store.add_hwm("c", "t", 0, 100, 0)
    for i in range(100):
        ts = 5000 if i % 2 else 1000
        store.add_commit("c", f"g{i:03d}", "t", 0, 10, ts, ts)
    expired = store.purge_expired("c", 5500)
    assert sorted(expired) == [f"g{i:03d}" for i in range(0, 100, 2)]
    assert store.groups("c") == [f"g{i:03d}" for i in range(1, 100, 2)]
    assert all(store.group_id("c", name) is None for name in expired)


def test_the_last_committed_group_is_not_taken_for_another() -> None:
    """The store remembers the last commit's group id (one group's commits come together); a deleted group's id
    handed to a new group, or the same name in another cluster, must not be read through it."""
    store = OffsetStore(intervals=3)
    for cluster in ("a", "b"):
        store.add_hwm(cluster, "t", 0, 100, 1000)
        store.add_hwm(cluster, "t", 1, 100, 1000)
    store.add_commit("a", "g", "t", 0, 10, 1000, 1000)
    store.add_commit("a", "g", "t", 1, 11, 1000, 1000)
    assert store.delete_group("a", "g")
    store.add_commit("a", "g", "t", 0, 10, 1000, 1000)  # right after its deletion: a new group, indexed
    first = store.group_id("a", "g")
    assert first is not None and store.groups("a") == ["g"]
    store.add_commit("b", "g", "t", 0, 12, 1000, 1000)
    assert store.group_id("b", "g") not in (None, first)
    assert store.delete_group("a", "g")
    store.add_commit("a", "h", "t", 0, 20, 2000, 2000)  # takes the freed id
    assert store.group_id("a", "h") == first
    store.add_commit("a", "g", "t", 0, 30, 3000, 3000)
    g, h = store.group_id("a", "g"), store.group_id("a", "h")
    assert g is not None and g not in (first, store.group_id("b", "g"))
    assert [store.commits.newest(s.slot) for s in store.slots("a", "h")] == [(20, 2000, 80), None]
    assert [store.commits.newest(s.slot) for s in store.slots("a", "g")] == [(30, 3000, 70), None]
    assert h == first


def test_the_name_order_is_kept_until_a_group_is_added_or_removed() -> None:
    """Sorting a million names that arrived shuffled costs a scrape about half a second, so the index keeps the
    order; a group added, removed, or a freed id reused under another name must give a fresh one."""
    store = OffsetStore(intervals=3)
    store.add_hwm("c", "t", 0, 100, 1000)
    groups = [f"g{i:04d}" for i in range(500)]
    random.Random(7).shuffle(groups)
    for i, group in enumerate(groups):
        store.add_commit("c", group, "t", 0, 10, 1000 + i, 1000 + i)
    index = store._gids["c"]
    first = index.in_name_order()
    assert index.in_name_order() is first  # kept: commits into stored groups do not re-sort
    store.add_commit("c", groups[0], "t", 0, 11, 5000, 5000)
    assert index.in_name_order() is first
    assert store.groups("c") == sorted(groups)

    store.add_commit("c", "a-new", "t", 0, 10, 6000, 6000)
    assert store.groups("c") == sorted([*groups, "a-new"])
    assert index.in_name_order() is not first

    old = store.group_id("c", "g0000")
    assert store.delete_group("c", "g0000")
    assert "g0000" not in store.groups("c")
    store.add_commit("c", "zz-reuses-the-id", "t", 0, 10, 7000, 7000)
    assert store.group_id("c", "zz-reuses-the-id") == old
    names, ids = store.sorted_groups("c")
    assert names == sorted([*(g for g in groups if g != "g0000"), "a-new", "zz-reuses-the-id"])
    assert names[-1] == "zz-reuses-the-id" and ids[-1] == old

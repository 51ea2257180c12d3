"""Each fault, 50 dialogues through the real batch layer: the run finishes and only the affected
dialogues end with a CRS error (with the right kind and reason) or `max_turns`, or, for a lone
surrogate, go on with the character replaced and counted."""

from __future__ import annotations

from pathlib import Path

import pytest

from crsim.model.dialogue import Fault, Role
from crsim.model.domain import Domain
from faults.fault_server import FAULTS, FaultPlan, ServerLog, fault_app, is_affected, serve_faults
from faults.harness import error_kinds, http_experiment, run_experiment
from faults.servers import running_server

#: Adapter settings where the test is not about time: deadlines far above what a reply takes even on
#: a loaded machine (a 0.5 s deadline once failed `http_500` under a load of 7 on 2 cores).
SETTINGS = {
    "timeout_s": 30.0,
    "connect_timeout_s": 30.0,
    "retry_backoff_s": 0.01,
    "max_response_bytes": 200_000,
}
#: The deadline of the faults that are about time (`hang`, `drip_headers`): still generous for a
#: normal reply, and a tenth of how long the fault would hold a dialogue without it.
DEADLINE_S = 3.0
#: The faults that are about time: the plan holding a reply ten times the deadline.
TIMED = {
    "hang": FaultPlan(kind="hang", hang_s=10 * DEADLINE_S),
    # each dripped byte (0.2 s) would beat a per-read timeout; the ~150-byte head takes ~30 s in all
    "drip_headers": FaultPlan(kind="drip_headers", drip_s=0.2),
}


@pytest.mark.parametrize("kind", sorted(FAULTS))
async def test_fault_ends_only_the_affected_dialogues(kind: str, domain: Domain, tmp_path: Path) -> None:
    plan, log = TIMED.get(kind, FaultPlan(kind=kind)), ServerLog()
    settings = {**SETTINGS, "timeout_s": DEADLINE_S} if kind in TIMED else SETTINGS
    with serve_faults(plan, log) as url:
        experiment = http_experiment(domain, url, **settings)
        result, dialogues = await run_experiment(experiment, tmp_path / kind)
    assert len(dialogues) == 50 == len({d.id for d in dialogues}) == result.ran
    affected = {d.id for d in dialogues if is_affected(d.id, plan.every)}
    assert 0 < len(affected) < 50
    expected_error = FAULTS[kind]
    for d in dialogues:
        assert d.termination is not None
        if d.id not in affected:
            assert d.termination.reason == "crs_ended", (d.id, d.termination)
            assert d.num_turns == plan.end_at
        elif expected_error is not None:
            assert d.termination.fault is Fault.CRS, (d.id, d.termination)
            assert d.termination.reason == "crs_error"
            assert d.termination.error is not None and d.termination.error.source == "crs"
            assert d.termination.error.type == expected_error
            assert d.num_turns == plan.at_turn  # ended at the first faulty turn, nothing after it
        elif kind == "never_end":
            assert d.termination.reason == "max_turns"
        else:
            assert d.termination.reason == "crs_ended"
        if kind == "lone_surrogate" and d.id in affected:
            replies = d.by(Role.CRS)[plan.at_turn :]  # the greeting, then one reply per turn
            assert replies and all(u.text.endswith(" \ufffd") for u in replies)
            assert all(u.annotations["replaced_code_points"] == 1 for u in replies)
        if kind in TIMED and d.id in affected:  # ended by the deadline, long before the fault would end
            assert d.timing is not None and DEADLINE_S <= d.timing.duration_s < 5 * DEADLINE_S, d.timing
    assert error_kinds(dialogues) == ({expected_error: len(affected)} if expected_error else {})
    assert log.faults[kind] >= len(affected) or kind == "never_end"


async def test_unaffected_replies_are_linked_to_items(domain: Domain, tmp_path: Path) -> None:
    with running_server(fault_app(FaultPlan(kind=None))) as url:
        _, dialogues = await run_experiment(
            http_experiment(domain, url, dialogues=3, **SETTINGS), tmp_path / "r"
        )
    reply = next(u for u in dialogues[0].utterances if u.role == "crs" and "Matrix" in u.text)
    assert [domain.items[i].title for i in reply.recommended_items] == ["The Matrix"]
    assert reply.annotations["recommended_items_source"] == "linked"


async def test_a_retried_500_is_recorded_and_a_lost_reply_is_not_resent_when_unsafe(
    domain: Domain, tmp_path: Path
) -> None:
    log = ServerLog()
    with running_server(fault_app(FaultPlan(kind="flaky_500"), log)) as url:
        _, dialogues = await run_experiment(http_experiment(domain, url, **SETTINGS), tmp_path / "a")
    with running_server(fault_app(FaultPlan(kind="flaky_500"))) as url:
        strict = http_experiment(domain, url, **SETTINGS, retry_unsafe=False)
        _, refused = await run_experiment(strict, tmp_path / "b")
    assert max(log.received.values()) == 2  # each faulty turn: the first attempt and one recorded resend
    retried = [u for d in dialogues for u in d.utterances if "http" in u.annotations]
    assert retried and all(u.annotations["http"]["message_possibly_resent"] for u in retried)
    assert all(u.annotations["http"]["retries"][0]["reason"].endswith("HTTP 500") for u in retried)
    assert error_kinds(refused) == {"CRSStatusError": sum(is_affected(d.id, 5) for d in refused)}


@pytest.mark.parametrize("where", ["refused", "dns"])
async def test_a_crs_server_that_cannot_be_reached_is_a_crs_error(
    where: str, domain: Domain, tmp_path: Path
) -> None:
    """A CRS that is down is the system under test failing: `crs_error` (preflight, before a run,
    says so once; within a run each dialogue records it)."""
    from llm_servers import closed_port_url

    url = closed_port_url() if where == "refused" else "http://crs.invalid:8000"
    settings = {**SETTINGS, "retry_backoff_s": 0.0}
    _, dialogues = await run_experiment(http_experiment(domain, url, dialogues=3, **settings), tmp_path)
    assert [d.termination.reason for d in dialogues if d.termination] == ["crs_error"] * 3
    assert error_kinds(dialogues) == {"CRSConnectionError": 3}

"""The restart-kill plugin: the example test against a good and a buggy agent, each kill mode, seeds, each check."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from handoff_files import HandoffStore, HandoffValidationError, Restored, load
from handoff_files.run.killrun import Incarnation, Kill, Killer, KillRun, Moment
from tests.ackforgery import SCRIPT as FORGER

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="the kill runner watches agents on Linux")

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
EXAMPLE = SAMPLES / "test_kill_example.py"
AGENT = SAMPLES / "steps_agent.py"


def agent(steps: int, *, delay: float = 0.002) -> list[str]:
    """The sample steps agent's command line."""
    return [sys.executable, str(AGENT), str(steps), "--delay", str(delay)]


def names(count: int) -> list[str]:
    """The steps the sample agent records for a task of *count* steps."""
    return [f"step {k}" for k in range(1, count + 1)]


# -- the example test, as an agent author would run it ---------------------------------------


def test_the_example_passes_against_the_steps_agent_after_at_least_20_kills(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", f"--basetemp={pytester.path / 'inner'}", str(EXAMPLE))
    result.assert_outcomes(passed=1)
    starts = sorted(pytester.path.glob("inner/**/handoff-kills/run-1/*.out"))
    finished = [path for path in starts if "FINISHED" in path.read_text()]
    # every start but the finishing one was killed (a crash would have failed the test)
    assert len(finished) == 1
    assert len(starts) - 1 >= 20


@pytest.mark.slow  # make slow: 20 kills of a faulty agent; the forged-acknowledgement and in-save tests stay
def test_the_example_fails_against_an_agent_that_skips_its_restore_and_says_why(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEPS_AGENT", "steps_agent_no_restore.py")
    result = pytester.runpytest("-p", "no:cacheprovider", str(EXAMPLE))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*broke its promise under 20 kills*",
            '*not acknowledged: start 2, on generation *, worked without a "resumed" journal line*',
            "*steps redone or lost: start *, began with * steps done * and left generation * recording *",
            "*rerun with --handoff-seed=*",
        ]
    )


# -- the plugin's wiring ---------------------------------------------------------------------

SEED_TEST = """
def test_seed(handoff_killer):
    assert handoff_killer.seed == 1234
"""


def test_handoff_seed_option_seeds_the_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SEED_TEST)
    pytester.runpytest("-p", "no:cacheprovider", "--handoff-seed=1234").assert_outcomes(passed=1)


def test_the_plugin_can_be_disabled_with_p_no_handoff_files(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SEED_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:handoff_files")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fixture 'handoff_killer' not found*"])


def test_loading_the_plugin_does_not_import_the_kill_runner(subprocess_env: dict[str, str]) -> None:
    code = "import sys, handoff_files.testing; print('handoff_files.run.killrun' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], env=subprocess_env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- kill modes ------------------------------------------------------------------------------


@pytest.mark.parametrize("durability", [pytest.param("full", id="full"), pytest.param("journal", id="journal")])
def test_saves_mode_kills_after_exactly_the_planned_saves(tmp_path: Path, durability: str) -> None:
    run = Killer(tmp_path, seed=1).run(
        agent(10, delay=0.02), kills=4, after_saves=2, env={"HANDOFF_DURABILITY": durability}
    )
    run.assert_finished(names(10))
    assert [start.kill.generation - start.generation for start in run.incarnations if start.kill] == [2, 2, 2, 2]
    if durability == "full":
        # the journal line is a full save's last write: the kill fell between two saves
        assert not any(kill.in_save for kill in run.kills)


@pytest.mark.slow  # make slow: three kill runs to compare plans
def test_the_same_seed_draws_the_same_kill_plan_and_another_seed_another(tmp_path: Path) -> None:
    def plan(seed: int, where: str) -> list[int]:
        run = Killer(tmp_path / where, seed=seed).run(agent(16, delay=0.01), kills=3, after_saves=(1, 4))
        run.assert_finished(names(16))
        return [kill.generation for kill in run.kills]

    first = plan(7, "a")
    assert plan(7, "b") == first
    assert plan(8, "c") != first  # seeds 7 and 8 draw different saves-per-kill (checked once, fixed by the seed)


@pytest.mark.parametrize(
    "durability", [pytest.param("full", id="full", marks=pytest.mark.slow), pytest.param("journal", id="journal")]
)
def test_in_save_kills_land_inside_saves_and_the_thread_still_restores(tmp_path: Path, durability: str) -> None:
    run = Killer(tmp_path, seed=3).run(agent(40), kills=8, when="in_save", env={"HANDOFF_DURABILITY": durability})
    run.assert_finished(names(40))
    # a kill is signalled on the save's first write; a journal-first save's copies after its commit
    # take ~0.3 ms since they are swapped in by an exchange of names, so on a loaded machine the signal
    # may arrive after them: 7-8 of 8 land inside on a quiet machine, 5 were seen under load
    least = 6 if durability == "full" else 4
    assert sum(kill.in_save for kill in run.kills) >= least, [kill.in_save for kill in run.kills]
    sources = {start.left.source for start in run.incarnations if start.kill and start.left}
    # a full save cut after its commit restores its history copy; a journal-first one its journal line
    assert ("history" if durability == "full" else "journal") in sources, sources


def test_random_mode_kills_within_the_span(tmp_path: Path) -> None:
    # each step sleeps 0.05 s, so a start killed within 0.4 s makes at most 8 saves: 4 kills leave
    # at most 32 of the 40 steps done however fast the machine is (with 2 ms steps, a fast machine
    # once finished the task before the fourth kill was due)
    run = Killer(tmp_path, seed=5).run(agent(40, delay=0.05), kills=4, when="random", span=0.4)
    run.assert_finished(names(40))
    assert all(0 <= kill.seconds <= 0.4 + 0.1 for kill in run.kills), run.kills


def test_a_when_callable_decides_each_kill_from_the_moment(tmp_path: Path) -> None:
    seen: list[Moment] = []

    def after_two_saves(moment: Moment) -> bool:
        seen.append(moment)
        return moment.saves >= 2

    run = Killer(tmp_path, seed=1).run(agent(8, delay=0.02), kills=3, when=after_two_saves)
    run.assert_finished(names(8))
    assert [kill.generation for kill in run.kills] == [2, 4, 6]
    assert {moment.start for moment in seen} == {1, 2, 3}


def test_sigterm_mode_signals_the_agent_and_it_resumes(tmp_path: Path) -> None:
    run = Killer(tmp_path, seed=1).run(agent(12, delay=0.02), kills=3, signal=signal.SIGTERM)
    run.assert_finished(names(12))
    assert [start.status for start in run.incarnations] == [-signal.SIGTERM] * 3 + [0]
    assert {kill.signal for kill in run.kills} == {"SIGTERM"}


# an agent that ignores SIGTERM and waits forever until the thread reaches generation 3
STUBBORN = """
import os, signal, time
from handoff_files import HandoffStore, NoHandoffError
signal.signal(signal.SIGTERM, signal.SIG_IGN)
store = HandoffStore(os.environ["HANDOFF_DIR"])
try:
    store.acknowledge(store.restore())
except NoHandoffError:
    pass
if store.save({"state": {}, "narrative": "n", "decisions": [], "priorities": [], "warnings": []}).generation < 3:
    time.sleep(60)
"""


def test_an_agent_that_ignores_sigterm_is_sigkilled_after_the_grace(tmp_path: Path) -> None:
    run = Killer(tmp_path, seed=1).run(
        [sys.executable, "-c", STUBBORN], kills=2, after_saves=1, signal=signal.SIGTERM, grace=0.2, timeout=30
    )
    run.assert_finished()
    assert [start.status for start in run.incarnations] == [-signal.SIGKILL, -signal.SIGKILL, 0]
    assert all(0.2 <= start.seconds - start.kill.seconds < 5 for start in run.incarnations if start.kill)


# -- runs that never finish ------------------------------------------------------------------


def test_a_crash_looping_agent_ends_the_run_with_the_seed_and_its_output(tmp_path: Path) -> None:
    crash = "import sys; print('cannot reach the model', file=sys.stderr); sys.exit(3)"
    run = Killer(tmp_path, seed=99).run([sys.executable, "-c", crash], kills=5, max_crashes=2)
    assert not run.finished
    assert len(run.incarnations) == 2
    with pytest.raises(AssertionError) as caught:
        run.assert_finished()
    message = str(caught.value)
    assert (
        "never finished: it crash-looped: 2 starts in a row died on their own, the last exited with status 3" in message
    )
    assert "crashed: start 1, on generation 0, exited with status 3 on its own" in message
    assert "seed 99" in message
    assert "stderr: cannot reach the model" in message


def test_an_agent_that_hangs_is_killed_at_the_timeout(tmp_path: Path) -> None:
    run = Killer(tmp_path, seed=1).run([sys.executable, "-c", "import time; time.sleep(60)"], kills=0, timeout=1)
    assert not run.finished
    assert run.kills == []
    assert run.incarnations[0].status == -signal.SIGKILL
    assert run.problems() == ["never finished: it did not finish in time: start 1 was killed at the run's timeout"]


def test_an_agent_that_finishes_before_the_kills_land_fails_the_check(tmp_path: Path) -> None:
    run = Killer(tmp_path, seed=1).run(agent(3), kills=5, after_saves=2)
    assert run.finished
    assert len(run.kills) == 1
    # how many kills the task held, how many saves the kills asked for need, and the knobs to turn
    assert run.problems(names(3)) == [
        "too few kills: only 1 of 5 landed before the agent finished its 3 saves (about one kill per 3.0 saves, "
        "so 5 kills need a task of about 15 saves): ask for fewer kills, give the agent a longer task, or kill "
        "it sooner (a smaller after_saves; with when='random', a shorter span)"
    ]


def test_a_task_too_short_for_any_kill_says_so(tmp_path: Path) -> None:
    run = Killer(tmp_path, seed=1).run(agent(1), kills=2, after_saves=3)
    assert run.finished
    assert run.kills == []
    assert run.problems(names(1)) == [
        "too few kills: none of 2 landed before the agent finished its 1 save: give the agent a longer task, "
        "or kill it sooner (a smaller after_saves; with when='random', a shorter span)"
    ]


def test_arguments_out_of_range_are_refused(tmp_path: Path) -> None:
    killer = Killer(tmp_path, seed=1)
    with pytest.raises(HandoffValidationError, match="kills >= 0"):
        killer.run(agent(1), kills=-1)
    with pytest.raises(HandoffValidationError, match="when must be"):
        killer.run(agent(1), kills=1, when="sometimes")  # type: ignore[arg-type]


# -- the checks on deliberately broken runs --------------------------------------------------


def generations(tmp_path: Path, records: list[list[str]]) -> list[Restored]:
    """Save one generation per list of completed steps; return each as restored from its history copy."""
    store = HandoffStore(tmp_path / "made", keep=len(records))
    for done in records:
        store.save(
            {"state": {"completed_tasks": done}, "narrative": "n", "decisions": [], "priorities": [], "warnings": []}
        )
    return [
        Restored(load(store.history_dir / f"{number:08d}.json"), "history", store.history_dir)
        for number in range(1, len(records) + 1)
    ]


def start(number: int, started: Restored | None, left: Restored | None, *, acknowledged: bool = True) -> Incarnation:
    """A start killed after it saved (or the last one, which exits 0)."""
    kill = None if number == 3 else Kill("SIGKILL", 0.1, left.generation if left else 0, in_save=False)
    return Incarnation(number, started, 0 if kill is None else -9, 0.2, "", "", acknowledged, kill, left)


def made_run(*starts: Incarnation) -> KillRun:
    return KillRun(1, 2, Path("thread"), starts, (), "the agent finished (exit 0) on start 3", timed_out=False)


def test_the_checks_pass_a_run_that_carried_on(tmp_path: Path) -> None:
    g = generations(tmp_path, [["step 1"], ["step 1", "step 2"], ["step 1", "step 2", "step 3"]])
    run = made_run(start(1, None, g[0]), start(2, g[0], g[1]), start(3, g[1], g[2]))
    assert run.problems(["step 1", "step 2", "step 3"]) == []
    assert run.steps_done() == ["step 1", "step 2", "step 3"]


def test_the_checks_catch_a_generation_that_went_backwards(tmp_path: Path) -> None:
    g = generations(tmp_path, [["step 1"], ["step 1", "step 2"]])
    run = made_run(start(1, None, g[1]), start(2, g[1], g[0]), start(3, g[0], g[1]))
    assert "generation went backwards: start 2, on generation 2, left generation 1" in run.problems()


def test_the_checks_catch_steps_recorded_twice_and_wrong_final_steps(tmp_path: Path) -> None:
    g = generations(tmp_path, [["step 1"], ["step 1", "step 1"], ["step 2", "step 1"]])
    twice = made_run(start(1, None, g[0]), start(2, g[0], g[1]), start(3, g[1], g[1]))
    assert "steps recorded twice: the final handoff records step 1 more than once" in twice.problems()
    shuffled = made_run(start(1, None, g[0]), start(2, g[0], g[0]), start(3, g[0], g[2]))
    assert any("the order differs" in line for line in shuffled.problems(["step 1", "step 2"]))
    assert any("missing step 3; unexpected none" in line for line in shuffled.problems(names(3)))


def test_the_acknowledgement_check_can_be_waived_and_catches_its_absence(tmp_path: Path) -> None:
    g = generations(tmp_path, [["step 1"], ["step 1", "step 2"]])
    run = made_run(start(1, None, g[0]), start(2, g[0], g[1], acknowledged=False), start(3, g[1], g[1]))
    assert run.problems(acknowledged=False) == []
    assert run.problems() == [
        'not acknowledged: start 2, on generation 1, worked without a "resumed" journal line, so without its context'
    ]


# -- proof of uptake: the briefing's acknowledgement code ------------------------------------


def test_every_restart_of_the_sample_agent_acknowledges_with_its_briefings_code(tmp_path: Path) -> None:
    run = Killer(tmp_path, seed=11).run(agent(12, delay=0.01), kills=4, after_saves=(1, 3))
    run.assert_finished(names(12), code=True)
    restarts = [start for start in run.incarnations if start.started is not None]
    assert len(restarts) == 4
    assert all(start.acknowledged and start.with_code for start in restarts)


def test_an_agent_that_restores_but_never_reads_its_briefing_is_caught(tmp_path: Path) -> None:
    run = Killer(tmp_path, seed=11).run([*agent(12, delay=0.01), "--skip-briefing"], kills=3, after_saves=(1, 3))
    assert run.problems(names(12)) == []  # it did acknowledge, so the old check passes it
    found = run.problems(names(12), code=True)
    assert len(found) == 3
    assert all(line.startswith("acknowledged without the code: start ") for line in found), found
    with pytest.raises(AssertionError, match="never gave its briefing's code"):
        run.assert_finished(names(12), code=True)


def test_an_agent_that_forges_its_acknowledgement_line_is_not_counted_with_the_code(tmp_path: Path) -> None:
    """Its "resumed" line says "code: right" and carries a proof no key made."""
    forger = [sys.executable, str(FORGER), "wrong-proof", "4", "--delay", "0.01"]
    run = Killer(tmp_path, seed=11).run(forger, kills=1, after_saves=1)
    restarts = [start for start in run.incarnations if start.started is not None]
    assert len(restarts) == 1
    assert restarts[0].acknowledged
    assert not restarts[0].with_code
    found = run.problems(names(4), code=True)
    assert len(found) == 1
    assert found[0].startswith("acknowledged without the code: start "), found

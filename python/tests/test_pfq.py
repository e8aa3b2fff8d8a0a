"""PFQ's switching rule (FracTrain Alg. 1) on synthetic loss curves."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from act.pfq import PlateauSchedule, parse_stages  # noqa: E402


def run(losses, **kw):
    s = PlateauSchedule(parse_stages("3/6,4/8,6/12,8/16"), **kw)
    stages = []
    for loss in losses:
        s.update(loss)
        stages.append(s.stage)
    return s, stages


def test_switches_after_window_flat_epochs_and_decays_eps():
    # Falling fast (differences 0.2 of the peak), then flat at 1% steps: the
    # switch comes once `window` consecutive differences are below eps.
    losses = [2.0, 1.6, 1.2, 0.8, 0.78, 0.76, 0.74]
    s, stages = run(losses, eps=0.05, alpha=0.3, window=3)
    assert stages[:6] == [(3, 6)] * 6
    assert stages[6] == (4, 8)
    assert s.switches == [(7, (4, 8), 0.05)]
    assert s.eps == pytest.approx(0.015)


def test_decayed_eps_needs_a_flatter_curve():
    # After the first switch eps is 0.015: differences of 0.01 (normalized
    # by the peak 2.0: 0.02 / 2) still switch, 0.04 / 2 = 0.02 do not.
    flat = [2.0, 1.96, 1.92, 1.88]  # differences 0.02
    s, stages = run(flat + [1.84, 1.80, 1.76, 1.72], eps=0.05, alpha=0.3, window=3)
    assert s.switches[0][0] == 4 and len(s.switches) == 1
    s, stages = run(flat + [1.86, 1.84, 1.82], eps=0.05, alpha=0.3, window=3)
    assert [w[0] for w in s.switches] == [4, 7]
    assert stages[-1] == (6, 12)


def test_last_stage_is_kept_and_noise_blocks_switching():
    s, stages = run([1.0] * 40, window=1)
    assert stages[-1] == (8, 16) and len(s.switches) == 3
    s, stages = run([1.0, 0.5] * 10, window=2)
    assert s.switches == [] and stages[-1] == (3, 6)


def test_bad_options():
    with pytest.raises(ValueError):
        PlateauSchedule([], eps=0.05)
    with pytest.raises(ValueError):
        PlateauSchedule([(8, 8)], alpha=0)
    assert parse_stages("8") == [(8, 8)]


def test_schedule_of_saved_and_compute_bits():
    from act.pfq import parse_schedule
    s = parse_schedule("3/6@2,4/8@4,8/16@8")
    assert [st.compute for st in s] == [(3, 6), (4, 8), (8, 16)]
    assert [st.saved for st in s] == [2, 4, 8]
    assert str(s[1]) == "4/8@4"
    saved_only = parse_schedule("@2,@4,@8")
    assert [st.compute for st in saved_only] == [None] * 3
    assert [st.saved for st in saved_only] == [2, 4, 8]
    assert parse_schedule("3/6,8/16")[1] == ((8, 16), None)
    for bad in ["@3", "3/6,@4", "@2,4/8@4", ""]:
        with pytest.raises(ValueError):
            parse_schedule(bad)

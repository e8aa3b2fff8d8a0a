"""The memory timeline (act-memory-report's JSON, python3 -m act.memory_plot):
where the peak is, what is live there, the plot written; bad input is an
error, not a traceback.

Needs act-opt: ACT_BIN_DIR (lit sets it) or build/bin.
"""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

from act import driver, memory_plot  # noqa: E402


def test_timeline_names_the_peak_and_plots(tmp_path, capsys):
    src = os.path.join(ROOT, "examples", "cnn.mlir")
    encoded = driver.insert(src, str(tmp_path / "cnn.mlir"), "encoding={#act.quant<bits = 2>}")
    report = driver.memory_report(encoded, str(tmp_path / "r.json"))
    peak = report["graphs"][0]["peak_estimate"]
    before, after = peak["point_before"], peak["point_after"]
    # The timeline's maximum is the peak; the live buffers there add up to it.
    assert max(after["timeline"]) == peak["bytes_after"]
    assert max(before["timeline"]) == peak["bytes_before"]
    assert sum(b["bytes"] for b in after["live"]) == peak["bytes_after"]
    assert after["op"] and after["location"].startswith(encoded)
    assert any(b["what"].startswith(("decoded value", "stored value", "argument"))
               for b in after["live"])
    out = tmp_path / "timeline.svg"
    assert memory_plot.main([str(tmp_path / "r.json"), "-o", str(out)]) == 0
    assert out.stat().st_size > 1000
    assert "peak" in capsys.readouterr().out


def test_bad_report_is_an_error(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"graphs": [{}]}))
    assert memory_plot.main([str(bad), "-o", str(tmp_path / "x.svg")]) == 1
    assert "is not an act memory report" in capsys.readouterr().err


def test_buffer_timelines_of_lowered_steps(tmp_path, capsys):
    """act-cpu-pipeline{peak-report}: the timeline's maximum is the peak, the
    live buffers add up to it, and encodings lower it; --buffers plots
    both steps on one figure."""
    src = os.path.join(ROOT, "examples", "cnn.mlir")
    reports = []
    for name, options in (("none", "policy=none"), ("q2", "encoding={#act.quant<bits = 2>}")):
        mlir = driver.insert(src, str(tmp_path / f"{name}.mlir"), options)
        path = str(tmp_path / f"{name}.json")
        driver.run("act-opt", mlir, f"-act-cpu-pipeline=peak-report={path}", "-o", os.devnull)
        function = json.load(open(path))["functions"][0]
        assert max(function["timeline"]) == function["peak_bytes"]
        assert sum(b["bytes"] for b in function["live"]) <= function["peak_bytes"]
        reports.append((path, function["peak_bytes"]))
    assert reports[1][1] < reports[0][1]
    out = tmp_path / "buffers.svg"
    assert memory_plot.main(["--buffers", f"{reports[0][0]}:none", f"{reports[1][0]}:2-bit",
                             "-o", str(out)]) == 0
    assert out.stat().st_size > 1000
    assert "2-bit: peak" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"functions": []}))
    assert memory_plot.main(["--buffers", str(bad), "-o", str(tmp_path / "x.svg")]) == 1
    assert "is not an act-buffer-peak report" in capsys.readouterr().err

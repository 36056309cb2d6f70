"""Benchmark 9: a brought profile's text, read as fast as the collapser reads it (issue 46). The
`perf script` text (default fields, what a researcher brings) of a perf.data recorded here during a
single all-opts flow (bench 5's recording: 10 kHz on every CPU), broken down into the category
tables by `hostnet breakdown`'s path (profiles.analyse) against `inferno-collapse-perf` folding the
same text to /dev/null. Each in its own process (bench/pipeline.py), alternating, so its peak RSS
is its own. Target: at least 15 MB/s of text at every size (the Perl collapser's pace on this
machine: 13 MB in 0.44 s, 66 MB in 4.5 s) with a peak RSS of at most 100 MB."""
from __future__ import annotations

from pathlib import Path

from hostnet.hosts import LocalHost

from .analysis_speed import analyse, record
from .stats import alternating, summarize, verdict

MODES = ["text-ours", "text-collapse"]
TARGET = (">=", 15.0)  # MB/s of perf script text, ours, at every size
RSS_TARGET_MB = 100.0


def measure(tb, sizes: list[int], repetitions: int, workdir: Path, kernel: str, log) -> list[dict]:
    rows = []
    for size in sizes:
        data, text = workdir / f"text-{size}.data", workdir / f"text-{size}.txt"
        record(tb, data, size)
        with text.open("wb") as out:  # perf's default fields, as bytes (a chunk may end mid-character)
            LocalHost("bench").stream(["perf", "script", "-i", str(data)],
                                      lambda chunks: [out.write(c) for c in chunks], timeout=1800)
        data.unlink()
        mb = text.stat().st_size / 1e6
        for rep, mode in alternating(MODES, repetitions):
            r = analyse(mode, text, kernel)
            rows.append({"size": size, "repetition": rep, "mode": mode, "text_mb": mb, **r})
            log(f"  {size:>9} samples {mode:>13}: " + (f"unsupported: {r['unsupported']}" if "unsupported" in r else
                f"{r['wall_s']:.2f} s for {mb:.0f} MB ({mb / r['wall_s']:.1f} MB/s), peak RSS "
                f"{max(r['maxrss_python_mb'], r['maxrss_children_mb']):.0f} MB"))
        text.unlink()
    return rows


def result(rows: list[dict]) -> dict:
    per_size: dict[int, dict] = {}
    for size in sorted({r["size"] for r in rows}):
        mine = [r for r in rows if r["size"] == size and "unsupported" not in r]
        ours = [r for r in mine if r["mode"] == "text-ours"]
        theirs = [r for r in mine if r["mode"] == "text-collapse"]
        mb = ours[0]["text_mb"] if ours else float("nan")
        per_size[size] = {
            "samples": next((r.get("samples", size) for r in ours), size), "text_mb": mb,
            "ours_s": summarize(r["wall_s"] for r in ours).as_dict(),
            "ours_mb_s": summarize(r["text_mb"] / r["wall_s"] for r in ours).median,
            "ours_rss_mb": max((r["maxrss_python_mb"] for r in ours), default=float("nan")),
            "collapser": next((r["collapser"] for r in theirs), None),
            "collapser_s": summarize(r["wall_s"] for r in theirs).as_dict() if theirs else None,
            "collapser_rss_mb": max((r["maxrss_children_mb"] for r in theirs), default=float("nan"))}
    speeds = [v["ours_mb_s"] for v in per_size.values()]
    value = min(speeds) if speeds else float("nan")
    rss = max((v["ours_rss_mb"] for v in per_size.values()), default=float("nan"))
    op, target = TARGET
    judged = verdict(value, op, target)
    if judged == "met" and not rss <= RSS_TARGET_MB:
        judged = "below target"
    text = "; ".join(
        f"{v['samples']:.3g} samples, {v['text_mb']:.0f} MB: ours {v['ours_s']['median']:.2f} s "
        f"({v['ours_mb_s']:.1f} MB/s, peak RSS {v['ours_rss_mb']:.0f} MB)"
        + (f", {v['collapser']} {v['collapser_s']['median']:.2f} s (peak RSS {v['collapser_rss_mb']:.0f} MB)"
           if v["collapser_s"] else ", no collapser installed")
        for v in per_size.values())
    return {"name": "text_speed", "title": "Brought text speed", "unit": "MB/s",
            "metric": "MB/s of perf script text (default fields) to the category tables, ours, slowest size",
            "summary": summarize(speeds).as_dict(), "value": value, "op": op, "target": target, "verdict": judged,
            "rows": rows, "per_size": {str(k): v for k, v in per_size.items()},
            "figure": f"text speed: {text}; target {op} {target} MB/s and peak RSS <= {RSS_TARGET_MB:.0f} MB"}

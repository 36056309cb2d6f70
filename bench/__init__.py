"""hostnet's own fidelity and speed, measured against doing it by hand (`make bench`).

Timings are ratios taken side by side in one run: variants alternate within each repetition
(ABAB..., the order rotated every repetition), and medians and ranges are reported.
"""

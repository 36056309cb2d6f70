"""A run whose probes started too late to measure most of it fails instead of reporting numbers."""
import pytest

from hostnet.runner import WindowTooShort, check_window


def test_a_window_of_a_quarter_or_more_is_accepted():
    check_window(0.5, 2, 1)
    check_window(2.5, 3, 8)


def test_a_window_under_a_quarter_of_the_run_is_refused_with_the_reason():
    with pytest.raises(WindowTooShort, match=r"0\.00 s is under a quarter of the 2 s run: starting 8 flows"):
        check_window(0.0001, 2, 8)
    with pytest.raises(WindowTooShort):
        check_window(0.74, 3, 1)

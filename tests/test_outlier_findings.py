"""Capped and pathological runs are stated, not passed off as data: hand-made tables through the
report functions of persistent_contact and energy_decay."""

from __future__ import annotations

import pandas as pd

from impactbench.studies import energy_decay, persistent_contact


def _contact_table() -> pd.DataFrame:
    """Four runs: a quiet one, one chattering at 0.5 events per step whose log overflowed, one
    chattering below it, and PaoliSchatzman deeper in the h sweep than at h = 2e-3."""
    base = {"status": "ok", "t_end": 100.0, "impact_log_entries": 60}
    rows = [
        {"problem": "resting ball", "method": "MoreauJean[activation=position]", "h": 2e-3,
         "steps": 50_000, "impacts": 40, "impacts_capped": False, "late_penetration": 1e-7},
        {"problem": "resting ball", "method": "PaoliSchatzman", "h": 1e-3, "steps": 200_000,
         "impacts": 100_000, "impacts_capped": True, "late_penetration": 1e-4,
         "impact_log_entries": 100_000},
        {"problem": "resting stack", "method": "PaoliSchatzman", "h": 2e-3, "steps": 50_000,
         "impacts": 1_000, "impacts_capped": False, "late_penetration": 1e-7},
        {"problem": "resting stack", "method": "CatchingUp", "h": 5e-3, "steps": 20_000,
         "impacts": 100, "impacts_capped": False, "late_penetration": 2e-6},
    ]  # fmt: skip
    return pd.DataFrame([{**base, **row} for row in rows])


def test_chatter_table_lists_the_runs_above_the_fraction_capped_counts_as_lower_bounds():
    table = persistent_contact.chatter(_contact_table())
    # 100 000 / 200 000 = 0.5 and 1 000 / 50 000 = 0.02 > 0.01; 40 / 50 000 and 100 / 20 000 not
    assert table["events per step"].tolist() == [0.5, 0.02]
    assert table["impact events"].tolist() == [">= 100000", "1000"]


def test_findings_state_capped_logs_chatter_and_the_deepest_run_of_every_sweep():
    table = _contact_table()
    findings = persistent_contact._outlier_findings(table, persistent_contact.chatter(table))
    text = "\n".join(findings)
    assert "1 of 4 runs overflowed their impact log" in text
    assert ">= 100000 events" in text
    assert "more than 0.01 of the steps, all constraints counted) in 2 runs" in text
    assert "PaoliSchatzman: resting ball, h = 0.001, T = 100, >= 100000 events in 200000" in text
    # the deepest PaoliSchatzman run is the h sweep's, not the h = 2e-3 one
    assert "largest depth over [T/2, T] 0.0001 (resting ball, h = 0.001" in text


def test_findings_ignore_a_table_without_the_capped_column():
    table = _contact_table().drop(columns="impacts_capped")
    assert persistent_contact.chatter(table)["impact events"].tolist() == ["100000", "1000"]


def test_energy_decay_states_total_dissipation_and_missing_impacts():
    rates = pd.DataFrame(
        [
            # dissipates everything: excess 0 at T against 0.5, 954 of 1000 impacts
            {"problem": energy_decay.SPRING, "method": "MoreauJeanProjection", "h": 3.16e-3,
             "tolerance": float("nan"), "impacts": 954, "impacts_exact": 1000,
             "final_excess": 0.0, "final_excess_exact": 0.5},
            # keeps its energy but misses two impacts
            {"problem": energy_decay.SPRING, "method": "MoreauJean", "h": 1e-3,
             "tolerance": float("nan"), "impacts": 998, "impacts_exact": 1000,
             "final_excess": 0.49, "final_excess_exact": 0.5},
            {"problem": energy_decay.SPRING, "method": "EventDriven", "h": float("nan"),
             "tolerance": 1e-8, "impacts": 1000, "impacts_exact": 1000,
             "final_excess": 0.5, "final_excess_exact": 0.5},
        ]
    )  # fmt: skip
    dissipated, short = energy_decay._outlier_findings(rates)
    assert dissipated.startswith(f"{energy_decay.SPRING}: 1 runs dissipate all the excess energy")
    assert "MoreauJeanProjection (h or rtol 0.00316" in dissipated and "954 of 1000" in dissipated
    assert "fewest: MoreauJean (h or rtol 0.001), 998 of 1000" in short

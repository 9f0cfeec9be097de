"""The crossover section of the studies that compare the families' cost against their error.

Per problem and pair of families, where the cost curves (Pareto fronts of error against median
wall time) cross, with its bootstrap interval, or "outside [a, b]" with the error range searched
(:mod:`impactbench.analysis.crossover`): as report sentences, a Markdown (and LaTeX) table and a
CSV file with the statements.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from impactbench.analysis.crossover import MIN_DECADES, crossover_table, crossovers
from impactbench.analysis.timing import CONFIDENCE, RESAMPLES
from impactbench.bench.report import markdown_table
from impactbench.bench.results import write_table
from impactbench.bench.study import Section
from impactbench.bench.style import metric_unit

#: What the crossover section says of its method.
METHOD_TEXT = (
    "Per problem and pair of families: each family's cost curve is the lower envelope (Pareto "
    "front) of its points (error, median wall time), interpolated piecewise linearly in log-log "
    "over the family's error range (to its least accurate run; flat above the envelope's "
    "loosest point, whose cost reaches those errors); the crossover accuracy is the error "
    "where the two curves' log-cost difference changes sign inside the overlap of their error "
    "ranges (the loosest such error when they cross more than once). Its interval is the "
    f"{CONFIDENCE * 100:g} % percentile bootstrap over {RESAMPLES} resamples (each run's timed "
    "repeats resampled apart, seeded; a resample whose curves do not cross counted at the end "
    "of the overlap its crossing left by, the bound then written <= a or >= b; the number of "
    "resamples that do not cross is given). "
    '"outside [a, b]": the curves do not cross over the overlap [a, b] searched, the family '
    f"named is cheaper over all of it. An overlap under {MIN_DECADES:g} decades is flagged as "
    "one: there the sweeps, not the methods, decide the comparison. "
)


def crossover_section(
    medians: pd.DataFrame, metric: str, folder: Path, file: str, note: str = ""
) -> tuple[Section, list[str]]:
    """The section "Crossover accuracy" and its findings (one sentence per problem).

    Parameters
    ----------
    medians : DataFrame
        One row per point (phase family or tolerance) with ``problem``, ``family``, ``metric``
        and ``wall_time_repeats`` (:func:`impactbench.analysis.crossover.crossovers`).
    metric : str
        The error column.
    folder : Path
        The report folder; the table is written to ``folder / file`` with the statements.
    file : str
        The CSV file name.
    note : str
        What the study adds of its sweeps (e.g. why a problem's ranges cannot overlap).
    """
    found = crossovers(medians, metric)
    if not found:
        return Section("Crossover accuracy", "None (no problem with two families timed).\n"), []
    units = {metric_unit(metric, item.problem) for item in found}
    unit = units.pop() if len(units) == 1 else "error unit"
    table = crossover_table(found, unit)
    if unit == "error unit":
        table.insert(2, "error unit", [metric_unit(metric, item.problem) for item in found])
    findings = []
    for problem in dict.fromkeys(item.problem for item in found):
        texts = [item.text for item in found if item.problem == problem]
        findings.append(f"{problem}: crossover accuracy ({metric}): " + "; ".join(texts) + ".")
    write_table(table.assign(statement=[item.text for item in found]), folder / file)
    text = (
        METHOD_TEXT
        + note
        + f"Statements and table in [{file}]({file}).\n\n"
        + "".join(f"- {finding}\n" for finding in findings)
        + "\n"
        + markdown_table(table)
    )
    return Section("Crossover accuracy", text), findings

"""``webrank bench SUITE``: run a benchmark suite, write results.json, report.md, plots."""

from __future__ import annotations

import click

from webrank.bench.suites import SUITES


@click.command(name="bench")
@click.argument("suite", type=click.Choice(list(SUITES)))
@click.option("--device", type=click.Choice(["cpu", "gpu", "both"]), default="both",
              show_default=True,
              help="Where to measure; 'both' measures the CPU only (and says so) when no "
                   "GPU is usable.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Output folder for results.json, report.md and the PNG plots "
                   "[default: bench-results/SUITE].")
@click.option("--quick", is_flag=True,
              help="CI-sized run: small graphs and grids, well under a minute.")
@click.option("--repeats", type=click.IntRange(min=1), default=None,
              help="Timed calls per measurement after one untimed warm-up "
                   "[default: 5; 2 with --quick].")
@click.option("--data", "data_dir", type=click.Path(file_okay=False, exists=True),
              default=None, envvar="WEBRANK_DATASETS", show_envvar=True,
              help="Folder holding the real datasets (NAME.txt.gz); web-NotreDame is "
                   "bundled.")
def command(suite, device, out_dir, quick, repeats, data_dir) -> None:
    """Run benchmark SUITE and report on it: a paper's experiment reproduced (dense:
    the dense-matrix CUDA power method of Swaroop and of Ghadge et al.; approx: Sgherzi's
    float and fixed point with convergence masks; extrapolation and iterations:
    Praveen et al.'s Aitken extrapolation and iteration counts; hybrid: Kumar et al.'s
    GPU+CPU split), webrank against its peers (baselines), the GPU engines (gpu) or a
    user's whole process (e2e).

    Writes OUT/results.json (machine, versions, commit, every measurement with
    median/min/max over the repeats), OUT/report.md (tables, plots, the comparison with
    the paper's published numbers) and PNG plots, and prints the summary tables.
    """
    from webrank.bench.runner import run_suite
    from webrank.cli.common import console as _console

    doc = run_suite(suite, device=device, out_dir=out_dir, quick=quick, repeats=repeats,
                    data_dir=data_dir, console=_console())
    out = out_dir if out_dir is not None else f"bench-results/{suite}"
    click.echo(f"wrote {out}/results.json, {out}/report.md and {len(doc['plots'])} plot(s) "
               f"({len(doc['measurements'])} measurements, {doc['wall_s']:.1f} s)")

"""Kraft et al.'s storage-consolidation models, reproduced from the paper's own published inputs.

These rows recompute the paper's *model* results (research/storage.md B1): the expected queue
length under SFQ(D) sharing (eq. 7, Table 2), the product-form baseline's error (eq. 11,
Table 6) and the decomposition model's linear predictors of read/write mixes, throughputs and
response times (Tables 13-15), each from the isolation measurements the paper prints, through
:mod:`vmtwin.models`. They are not simulated runs of the engine's storage stack (the runs of the
engine's storage stack, ``psp-rr-vs-adaptive`` and ``storage-sfqd-shares``, run scenarios:
:mod:`vmtwin.reproduce.storage_engine`). Every target is printed in the paper; cells the
extraction says cannot be reproduced from the published means are shown unjudged, with the
reason.
"""

from __future__ import annotations

from typing import Callable

from vmtwin.reproduce.base import Experiment, Row


def _rows(name: str) -> Callable[[], list[Row]]:
    """``kraft_rows.<name>``, imported when run: that module imports this package's ``Row``."""

    def run() -> list[Row]:
        from vmtwin.models import kraft_rows

        return getattr(kraft_rows, name)()

    return run

STORAGE_EXPERIMENTS = [
    Experiment("storage-table2", "Kraft Table 2: expected queue length of K consolidated VMs (eq. 7)",
               "Kraft et al. §4, Table 2", _rows("table2_rows")),
    Experiment("storage-table6", "Kraft Table 6: product-form baseline's response-time error (eq. 11)",
               "Kraft et al. §5.3.2, Table 6", _rows("table6_product_form_rows")),
    Experiment("storage-tables13-15", "Kraft Tables 13-15: linear predictors of mixes, throughputs, response times",
               "Kraft et al. §6.2, Tables 13-15", _rows("decomposition_rows")),
]

from vmtwin.reproduce.storage_engine import STORAGE_ENGINE_EXPERIMENTS  # noqa: E402 - engine runs, same family

from vmtwin.reproduce.storage_kraft import STORAGE_KRAFT_EXPERIMENTS  # noqa: E402 - engine runs, same family
from vmtwin.reproduce.storage_kraft_models import STORAGE_KRAFT_MODEL_EXPERIMENTS  # noqa: E402 - models on engine runs

STORAGE_EXPERIMENTS = [*STORAGE_EXPERIMENTS, *STORAGE_ENGINE_EXPERIMENTS, *STORAGE_KRAFT_EXPERIMENTS,
                       *STORAGE_KRAFT_MODEL_EXPERIMENTS]

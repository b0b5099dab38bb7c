"""What a fitted family chose, in its comparison row (``chosen``): MLGPF's kernel choice."""

from __future__ import annotations

import pandas as pd
import pytest

from mlgp.comparison.isolation import _chosen_text
from mlgp.comparison.report import best_lines
from mlgp.comparison.resume import _Bad, _check_row


def _choice(chosen):
    return pd.DataFrame({"kernel": ["se+linear-shared", "linear", "se"], "held_out_lpd": [-3.6938, -3.5143, -3.7411],
                         "epochs": [3, 4, 5], "best_epoch": [3, 4, 5], "seconds": [1.0, 1.0, 1.0],
                         "bias_only": [False] * 3, "chosen": chosen})


def test_the_winner_and_the_others_with_their_held_out_densities() -> None:
    assert _chosen_text(_choice([False, True, False])) == \
        "kernel linear (held-out LPD -3.514; se+linear-shared -3.694, se -3.741)"
    one = _choice([True, False, False]).iloc[:1]
    assert _chosen_text(one) == "kernel se+linear-shared (held-out LPD -3.694)"


@pytest.mark.parametrize("choice", [None, _choice([False] * 3).iloc[:0], _choice([False, False, False]),
                                    _choice([True, True, False])])
def test_no_choice_or_no_single_winner_is_no_text(choice) -> None:
    assert _chosen_text(choice) == ""


def test_the_report_says_what_was_chosen() -> None:
    results = pd.DataFrame({"family": ["frequency", "mlgpf"], "P@1": [10.0, 20.0], "chosen": [None, "kernel se (x)"]})
    assert "- mlgpf chose kernel se (x)." in best_lines(results)
    assert not any("chose" in line for line in best_lines(results.drop(columns="chosen")))


@pytest.mark.slow
def test_mlgpf_row_says_which_kernel_auto_chose() -> None:
    import mlgp
    from _compare_stubs import tiny

    small = {"epochs": 1, "num_latent_gps": 2, "num_inducing": 5, "batch_size": 16}
    results = mlgp.compare("mlgpf", dataset=tiny(), isolate=False, settings={"mlgpf": small}).results
    chosen = results.set_index("family").loc["mlgpf", "chosen"]
    assert chosen.startswith("kernel ") and "held-out LPD" in chosen and chosen.count(", ") == 1

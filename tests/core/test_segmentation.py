"""Segmentation: per-class IoU, mIoU and Dice pooled over all pixels of all images (issue 3).

Label maps (N, H, W) or score maps (N, K, H, W); a class absent from both prediction and target is
NaN and left out of the mean; ``ignore_index`` (255) drops pixels. Never the mean of per-image or
per-batch values.
"""

from __future__ import annotations

import warnings

import numpy as np
import pyarrow as pa
import pytest
from sklearn import metrics as skm

from mergeable_metrics import Evaluation, MetricCollection
from tests._helpers import close

K = 4
pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")  # class 3 is absent on purpose


def _maps(seed: int, n: int = 6, h: int = 5, w: int = 7):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K - 1, (n, h, w))  # class 3 never in the target
    pred = np.where(rng.random((n, h, w)) < 0.7, y, rng.integers(0, K - 1, (n, h, w)))
    scores = rng.random((n, K, h, w))
    scores[np.arange(n)[:, None, None], pred, np.arange(h)[None, :, None], np.arange(w)[None, None, :]] += 2.0
    scores /= scores.sum(axis=1, keepdims=True)
    y[0, 0, :3] = 255  # void pixels
    return y, pred, scores


def _jaccard_nan(y, p, labels):
    j0 = skm.jaccard_score(y, p, labels=labels, average=None, zero_division=0)
    j1 = skm.jaccard_score(y, p, labels=labels, average=None, zero_division=1)
    return np.where(j0 == j1, j0, np.nan)


def test_label_maps_pooled_over_all_pixels_match_sklearn():
    y, pred, _ = _maps(0)
    mc = MetricCollection("iou@none", "miou", "dice@none", "dice", "accuracy", "example_count", num_classes=K, ignore_index=255)
    for i in range(0, 6, 2):  # three batches of two images
        mc.update(y[i : i + 2], y_pred=pred[i : i + 2])
    r = mc.compute()
    keep = y.reshape(-1) != 255
    yt, pt = y.reshape(-1)[keep], pred.reshape(-1)[keep]
    jac = _jaccard_nan(yt, pt, list(range(K)))
    assert np.isnan(jac[3]) and np.isnan(r["iou@none"][3])  # absent from prediction and target
    assert close(r["iou@none"], jac) and close(r["miou"], np.nanmean(jac))
    assert close(r["dice@none"][:3], skm.f1_score(yt, pt, labels=[0, 1, 2], average=None))
    assert close(r["dice@macro"], np.nanmean(r["dice@none"]))
    assert close(r["accuracy"], skm.accuracy_score(yt, pt))
    assert r["example_count"] == 6  # images, not pixels


def test_miou_is_not_the_mean_of_per_image_miou():
    y, pred, _ = _maps(1)
    pooled = MetricCollection("miou", num_classes=K, ignore_index=255)
    pooled.update(y, y_pred=pred)
    per_image = []
    for i in range(len(y)):
        mc = MetricCollection("miou", num_classes=K, ignore_index=255)
        mc.update(y[i : i + 1], y_pred=pred[i : i + 1])
        per_image.append(mc.compute()["miou"])
    assert not close(pooled.compute()["miou"], float(np.mean(per_image)))


def test_score_maps_give_the_same_state_as_their_argmax_label_maps():
    y, pred, scores = _maps(2)
    by_scores = MetricCollection("iou@none", "miou", "log_loss", num_classes=K, ignore_index=255)
    by_scores.update(y, y_score=scores)
    by_labels = MetricCollection("iou@none", "miou", num_classes=K, ignore_index=255)
    by_labels.update(y, y_pred=pred)
    assert by_scores.states[:2] == by_labels.states
    keep = y.reshape(-1) != 255
    pix = np.moveaxis(scores, 1, -1).reshape(-1, K)[keep]
    assert close(by_scores.compute()["log_loss"], skm.log_loss(y.reshape(-1)[keep], pix, labels=range(K)))


def test_map_shape_and_value_errors_name_row_and_pixel():
    y, pred, scores = _maps(3)
    mc = MetricCollection("miou", num_classes=K, ignore_index=255)
    bad = pred.copy()
    bad[2, 1, 4] = 9
    with pytest.raises(ValueError, match=r"column 'y_pred': invalid value 9\.0 at row 2, entry \(1, 4\): predictions must be integers in \[0, 4\)"):
        mc.update(y, y_pred=bad)
    with pytest.raises(ValueError, match="maps of different sizes"):
        mc.update(y, y_pred=pred[:, :, :3])
    with pytest.raises(ValueError, match="one value per row but column 'y_true' holds maps"):
        mc.update(y, y_pred=pred[:, 0, 0])


def test_evaluation_reads_list_valued_image_rows_with_slices_and_weights():
    y, pred, _ = _maps(4)
    sites = ["a", "b", "a", "b", "a", "a"]
    w = [1.0, 2.0, 0.0, 1.0, 1.0, 3.0]
    table = pa.table({"mask": [m.tolist() for m in y], "pred": [m.tolist() for m in pred], "site": sites, "w": w})
    ev = Evaluation(label_col="mask", prediction_col="pred", weight_col="w", num_classes=K, ignore_index=255, slices=["site"],
                    metrics=["iou@none", "miou", "example_count", "weighted_example_count"])  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ev.evaluate(table.to_batches(max_chunksize=4))
    for key, rows in (((), range(6)), ((("site", "a"),), [0, 2, 4, 5])):
        rows = list(rows)
        ww = np.repeat(np.asarray(w)[rows], y[0].size)
        yt, pt = y[rows].reshape(-1), pred[rows].reshape(-1)
        keep = yt != 255
        j0 = skm.jaccard_score(yt[keep], pt[keep], labels=range(K), average=None, sample_weight=ww[keep], zero_division=0)
        j1 = skm.jaccard_score(yt[keep], pt[keep], labels=range(K), average=None, sample_weight=ww[keep], zero_division=1)
        jac = np.where(j0 == j1, j0, np.nan)
        s = res[key]
        assert close(s.metrics["iou@none"], jac) and close(s.metrics["miou"], np.nanmean(jac))
        assert s.metrics["example_count"] == len(rows) and close(s.metrics["weighted_example_count"], float(np.asarray(w)[rows].sum()))
    assert res[()].undefined == [{"metric": "iou@none", "classes": [3]}]


# -- reference cases (data copied from ../shared/cases/reference_cases.json) ---------------------
def _fold_workers(make, workers):
    parts = []
    for batches in workers:
        mc = make()
        for b in batches:
            mc.update(b["y_true"], y_pred=b["y_pred"])
        parts.append(mc)
    merged = make()
    for mc in reversed(parts):
        merged.merge(mc)
    return merged.compute()


def test_ho19_iou_ignore_index_255():
    """torchmetrics#1385: the ignored label must not stay in the mIoU mean."""
    workers = [
        [{"y_true": [0, 0, 1, 1, 255, 2], "y_pred": [0, 1, 1, 1, 2, 2]}],
        [{"y_true": [2, 2, 255, 0, 1, 255], "y_pred": [2, 0, 3, 0, 1, 1]}],
    ]
    values = _fold_workers(lambda: MetricCollection("iou@none", "miou", num_classes=4, ignore_index=255), workers)
    assert close(values["iou@none"], [0.5, 0.75, 0.6666666666666666, float("nan")])
    assert close(values["miou"], 0.6388888888888888)


def test_ho21_miou_batch_mean_vs_global():
    """IvLabs/stagewise-knowledge-distillation#12: mIoU from pooled counts, not per-batch means."""
    workers = [
        [{"y_true": [0, 0, 0, 1], "y_pred": [0, 0, 0, 1]}],
        [{"y_true": [1, 1, 1, 1, 1, 0], "y_pred": [1, 0, 0, 0, 0, 0]}],
    ]
    values = _fold_workers(lambda: MetricCollection("iou@none", "miou", num_classes=2, task="multiclass"), workers)
    assert close(values["iou@none"], [0.5, 0.3333333333333333])
    assert close(values["miou"], 0.41666666666666663)

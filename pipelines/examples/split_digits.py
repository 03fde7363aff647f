"""Real-data continual-learning example: scikit-learn's ``load_digits`` split into tasks.

The 1,797 8x8 digit images (10 classes) are split into ``num_tasks`` tasks of consecutive class
pairs (task 0 = digits 0 and 1, task 1 = 2 and 3, ...). Each task's images are split into a
training part (70%) and a test part (30%), stratified by class with a fixed seed. An online
learner, ``SGDClassifier(loss="log_loss")`` trained with ``partial_fit`` over all 10 classes, sees
the tasks in order. While it trains on task ``i`` it is evaluated ``evaluations_per_task`` times on
every task's test part (after each equal share of task ``i``'s training images: the *anytime*
evaluations, ``step = 0..H-1``), and once more when task ``i`` ended (``step`` null: the accuracy
matrix ``R``; the same predictions as the last anytime step, as CapyMOA takes them).

Every prediction is one *event row* ``(trained_task, step, evaluated_task, label, prediction)``,
the input of ``mergeable_metrics.ContinualEvaluation`` and of ``python -m mergeable_metrics.pipelines.evaluate --task continual``
on every engine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

#: the learner's settings (fixed, so the example's numbers are reproducible)
SEED = 0


def split_digits_events(num_tasks: int = 5, evaluations_per_task: int = 4, seed: int = SEED) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Train and evaluate the online learner; return the event columns and a description.

    Returns:
        ``(columns, info)``: columns ``trained_task``, ``step`` (float64, NaN = after the task),
        ``evaluated_task``, ``label``, ``prediction`` (int64), one row per test image and
        evaluation; ``info`` the example's sizes and settings.
    """
    from sklearn.datasets import load_digits
    from sklearn.linear_model import SGDClassifier
    from sklearn.model_selection import train_test_split

    if not 1 <= num_tasks <= 10 or 10 % num_tasks:
        raise ValueError(f"num_tasks must divide the 10 digit classes (1, 2, 5 or 10), got {num_tasks}")
    x, y = load_digits(return_X_y=True)
    x = x / 16.0
    per = 10 // num_tasks
    tasks = []
    for t in range(num_tasks):
        mask = (y >= t * per) & (y < (t + 1) * per)
        xtr, xte, ytr, yte = train_test_split(x[mask], y[mask], test_size=0.3, random_state=seed + t, stratify=y[mask])
        tasks.append((xtr, ytr, xte, yte))
    model = SGDClassifier(loss="log_loss", random_state=seed)
    classes = np.arange(10)
    cols: dict[str, list[np.ndarray]] = {c: [] for c in ("trained_task", "step", "evaluated_task", "label", "prediction")}

    def evaluate(trained: int, step: float) -> None:
        for j, (_, _, xte, yte) in enumerate(tasks):
            n = yte.shape[0]
            cols["trained_task"].append(np.full(n, trained, np.int64))
            cols["step"].append(np.full(n, step, np.float64))
            cols["evaluated_task"].append(np.full(n, j, np.int64))
            cols["label"].append(yte.astype(np.int64))
            cols["prediction"].append(model.predict(xte).astype(np.int64))

    for i, (xtr, ytr, _, _) in enumerate(tasks):
        order = np.random.default_rng(seed + 100 + i).permutation(ytr.shape[0])
        chunks = np.array_split(order, max(evaluations_per_task, 1))
        for h, idx in enumerate(chunks):
            model.partial_fit(xtr[idx], ytr[idx], classes=classes)
            if evaluations_per_task:
                evaluate(i, float(h))
        evaluate(i, np.nan)
    columns = {c: np.concatenate(v) for c, v in cols.items()}
    info = {
        "name": "split-digits",
        "images": int(y.shape[0]),
        "num_tasks": num_tasks,
        "classes_per_task": per,
        "num_classes": 10,
        "evaluations_per_task": evaluations_per_task,
        "train_images": int(sum(t[1].shape[0] for t in tasks)),
        "test_images": int(sum(t[3].shape[0] for t in tasks)),
        "events": int(columns["label"].shape[0]),
        "learner": "sklearn SGDClassifier(loss='log_loss', random_state=0).partial_fit",
    }
    return columns, info


def build_split_digits_events(path: str | Path, num_tasks: int = 5, evaluations_per_task: int = 4) -> dict[str, Any]:
    """Write the example's event rows to a Parquet file (``step`` null after each task); return its info."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns, info = split_digits_events(num_tasks, evaluations_per_task)
    step = pa.array(columns["step"], mask=np.isnan(columns["step"])).cast(pa.int64())
    table = pa.table({"trained_task": columns["trained_task"], "step": step, "evaluated_task": columns["evaluated_task"],
                      "label": columns["label"], "prediction": columns["prediction"]})  # fmt: skip
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return info

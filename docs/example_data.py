import numpy as np, pandas as pd, pyarrow as pa
import mergeable_metrics
from mergeable_metrics import BinaryMetrics, Evaluation, MetricCollection

rng = np.random.default_rng(0)
n = 400
y_true = y = rng.integers(0, 2, n)  # binary labels
y_score = np.clip(0.35 * y_true + 0.65 * rng.random(n), 0, 1)  # scores in [0, 1]
w = rng.integers(1, 4, n).astype(float)  # sample weights
y_pred = rng.integers(0, 10, n)  # predicted classes of a 10-class model
df = pd.DataFrame(
    {
        "y": y_true,
        "p": y_score,
        "y_hat": (y_score >= 0.5).astype(int),
        "w": w,
        "user_id": np.arange(n),
        "country": rng.choice(["DE", "FR", "US"], n),
        "device": rng.choice(["mobile", "desktop"], n),
        "p_new": y_score,
        "p_old": np.clip(y_score + rng.normal(0, 0.2, n), 0, 1),
    }
)  # two models' scores
table = pa.Table.from_pandas(df)  # the same rows as an Arrow table
batches = [table.slice(i, 100) for i in range(0, n, 100)]  # ... and as an iterable of batches

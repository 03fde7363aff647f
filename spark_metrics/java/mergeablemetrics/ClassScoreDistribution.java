package mergeablemetrics;

/**
 * {@code class_score_distribution} (core/states/score_distribution.py ClassScoreDistributionState): per class
 * column c of an (N, K) score matrix, the canonical score distribution of {@code scores[c]} ({@link WideBins},
 * the binning of {@link ScoreDistribution}) whose bins hold the exact weight of every true class: what
 * one-vs-rest and one-vs-one multiclass ROC AUC and average precision need. Reads score rows
 * ({@link #updateVector}: a label in [0, K), K finite scores, a weight); zero-weight rows leave no trace.
 * Writes exactly core's bytes: {@code levels} (K), {@code offsets} (K + 1), {@code keys} (M, ascending per
 * column), {@code weights} (M * K exact sums, row-major) and its limbs.
 */
public final class ClassScoreDistribution implements JvmState {
    private static final long serialVersionUID = 1L;
    static final String KIND = "class_score_distribution";
    private final FloatConfig cfg;
    private final int k;
    private final int capacity;
    private final WideBins[] cols;

    public ClassScoreDistribution(String config) {
        cfg = new FloatConfig(KIND, config);
        k = cfg.integer("num_classes");
        capacity = cfg.integer("capacity");
        if (k < 2) throw new IllegalArgumentException(KIND + ": num_classes " + k + " < 2");
        if (capacity < 2) throw new IllegalArgumentException(KIND + ": capacity " + capacity + " < 2");
        cols = new WideBins[k];
        for (int c = 0; c < k; c++) cols[c] = new WideBins(k, capacity);
    }

    @Override
    public void update(double label, double score, double weight) {
        throw new IllegalArgumentException(KIND + ": reads score rows of " + k + " classes (updateVector)");
    }

    @Override
    public void updateVector(double label, double[] scores, double weight) {
        FloatConfig.checkWeight(KIND, weight);
        if (scores.length != k) throw new IllegalArgumentException(KIND + ": a score row of " + scores.length + " entries, not " + k);
        for (double s : scores) FloatConfig.checkFinite(KIND, "score", s);
        if (!(label >= 0 && label < k && label == Math.rint(label))) throw new IllegalArgumentException(KIND + ": label " + label + " is not a class in [0, " + k + ")");
        if (weight == 0) return; // zero-weight rows leave no trace
        int y = (int) label;
        for (int c = 0; c < k; c++) cols[c].add(ScoreDistribution.scoreKey(scores[c]), y, weight);
    }

    @Override
    public void merge(JvmState other) {
        if (!(other instanceof ClassScoreDistribution)) throw new IllegalArgumentException("cannot merge " + other.getClass().getSimpleName() + " into " + KIND);
        ClassScoreDistribution o = (ClassScoreDistribution) other;
        cfg.checkSame(KIND, o.cfg);
        for (int c = 0; c < k; c++) cols[c].merge(o.cols[c]);
    }

    @Override
    public byte[] toBytes() {
        long[] levels = new long[k], offsets = new long[k + 1];
        int total = 0;
        for (int c = 0; c < k; c++) {
            cols[c].sorted();
            levels[c] = cols[c].level;
            total += cols[c].m;
            offsets[c + 1] = total;
        }
        long[] keys = new long[total];
        ExactSum[] weights = new ExactSum[total * k];
        int at = 0;
        for (WideBins b : cols) {
            System.arraycopy(b.keys, 0, keys, at, b.m);
            for (int i = 0; i < b.m * k; i++) weights[at * k + i] = b.total(i);
            at += b.m;
        }
        ExactSum.Encoded w = ExactSum.encode(weights);
        StateFrame f = new StateFrame(KIND, 1, cfg.layoutJson);
        f.i64("levels", new long[] {k}, levels);
        f.i64("offsets", new long[] {k + 1}, offsets);
        f.i64("keys", new long[] {total}, keys);
        f.exactValues("weights", new long[] {(long) total * k}, w);
        f.exactLimbs("weights", w);
        return f.finish();
    }
}

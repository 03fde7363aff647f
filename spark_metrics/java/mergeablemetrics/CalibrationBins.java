package mergeablemetrics;

/**
 * {@code calibration_bins} (core/metrics/calibration.py CalibrationBinsState): per equal-width
 * bin, for every bin count of the layout, the exact weight, {@code sum w p} and {@code sum w y}.
 * Binary layouts (num_classes 0) read (label, score): bins {@code [i/B, (i+1)/B)}, the last closed
 * at 1.0. Multiclass layouts read probability rows ({@link #updateVector}): K one-vs-rest rows and
 * the top label, each histogram with B + 1 cells (1.0 apart).
 */
public final class CalibrationBins implements JvmState {
    private static final long serialVersionUID = 1L;
    static final String KIND = "calibration_bins";
    private final FloatConfig cfg;
    private final int[] bins;
    private final int[] offsets;
    private final int k; // 0: binary
    private final int cells;
    private final ExactSum[] count, sumScore, sumLabel;

    public CalibrationBins(String config) {
        cfg = new FloatConfig(KIND, config);
        bins = cfg.ints("bins");
        k = cfg.integer("num_classes");
        offsets = new int[bins.length];
        int c = 0;
        for (int i = 0; i < bins.length; i++) {
            offsets[i] = c;
            c += bins[i] + (k > 0 ? 1 : 0);
        }
        cells = c;
        int n = (k > 0 ? k + 1 : 1) * cells;
        count = FloatConfig.sums(n);
        sumScore = FloatConfig.sums(n);
        sumLabel = FloatConfig.sums(n);
    }

    /** Number of edges {@code i / B} (i = 1 .. B - 1, or .. B with {@code oneApart}) at or below {@code p}: np.searchsorted(side="right"). */
    static int binIndex(double p, int b, boolean oneApart) {
        int lo = 0, hi = oneApart ? b : b - 1; // edges e_1 .. e_hi; answer in [0, hi]
        while (lo < hi) {
            int mid = (lo + hi + 1) >>> 1;
            if ((double) mid / b <= p) lo = mid;
            else hi = mid - 1;
        }
        return lo;
    }

    private void add(int row, double q, boolean lab, double w) {
        for (int i = 0; i < bins.length; i++) {
            int cell = row * cells + offsets[i] + binIndex(q, bins[i], k > 0);
            count[cell].add(w);
            sumScore[cell].addProduct(q, w);
            if (lab) sumLabel[cell].add(w);
        }
    }

    @Override
    public void update(double label, double score, double weight) {
        if (k > 0) throw new IllegalArgumentException(KIND + ": a multiclass layout reads probability rows (updateVector)");
        FloatConfig.checkWeight(KIND, weight);
        FloatConfig.checkFinite(KIND, "score", score);
        add(0, score, label != 0, weight);
    }

    @Override
    public void updateVector(double label, double[] scores, double weight) {
        if (k == 0) throw new IllegalArgumentException(KIND + ": a binary layout reads one score per row (update)");
        FloatConfig.checkWeight(KIND, weight);
        if (scores.length != k) throw new IllegalArgumentException(KIND + ": " + scores.length + " probabilities, expected " + k);
        int top = 0;
        for (int j = 0; j < k; j++) {
            FloatConfig.checkFinite(KIND, "probability", scores[j]);
            if (scores[j] > scores[top]) top = j; // np.argmax: the first maximum
        }
        for (int j = 0; j < k; j++) add(j, scores[j], label == j, weight);
        add(k, scores[top], top == label, weight);
    }

    @Override
    public void merge(JvmState other) {
        if (!(other instanceof CalibrationBins)) throw new IllegalArgumentException("cannot merge " + other.getClass().getSimpleName() + " into " + KIND);
        CalibrationBins o = (CalibrationBins) other;
        cfg.checkSame(KIND, o.cfg);
        FloatConfig.mergeAll(count, o.count);
        FloatConfig.mergeAll(sumScore, o.sumScore);
        FloatConfig.mergeAll(sumLabel, o.sumLabel);
    }

    @Override
    public byte[] toBytes() {
        long[] shape = k > 0 ? new long[] {k + 1, cells} : new long[] {cells};
        ExactSum.Encoded[] e = {ExactSum.encode(count), ExactSum.encode(sumScore), ExactSum.encode(sumLabel)};
        String[] names = {"count", "sum_score", "sum_label"};
        StateFrame f = new StateFrame(KIND, 2, cfg.layoutJson);
        for (int i = 0; i < 3; i++) f.exactValues(names[i], shape, e[i]);
        for (int i = 0; i < 3; i++) f.exactLimbs(names[i], e[i]);
        return f.finish();
    }
}

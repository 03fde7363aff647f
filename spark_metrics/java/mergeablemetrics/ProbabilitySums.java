package mergeablemetrics;

/**
 * {@code probability_sums} (core/metrics/calibration.py ProbabilitySumsState): weight,
 * {@code sum w y}, {@code sum w p}, the Brier sum and the log-loss sum per clipping eps, all exact.
 * Binary layouts read (label, score); multiclass layouts read probability rows through
 * {@link #updateVector}. Multilabel layouts are not ported.
 */
public final class ProbabilitySums implements JvmState {
    private static final long serialVersionUID = 1L;
    static final String KIND = "probability_sums";
    private final FloatConfig cfg;
    private final boolean binary;
    private final int k;
    private final double[] eps;
    private final ExactSum weight = new ExactSum(), sumLabel = new ExactSum(), sumScore = new ExactSum(), brier = new ExactSum();
    private final ExactSum[] logLoss;

    public ProbabilitySums(String config) {
        cfg = new FloatConfig(KIND, config);
        if (cfg.bool("multilabel")) throw new IllegalArgumentException(KIND + ": multilabel layouts are not ported to the JVM");
        binary = cfg.bool("binary");
        k = cfg.integer("num_classes");
        eps = cfg.doubles("eps");
        logLoss = FloatConfig.sums(eps.length);
    }

    private void addLogLoss(double pTrue, double w) {
        for (int e = 0; e < eps.length; e++) {
            double c = Math.min(Math.max(pTrue, eps[e]), 1 - eps[e]); // np.clip
            logLoss[e].addProduct(-FloatMath.log(c), w);
        }
    }

    @Override
    public void update(double label, double score, double weight) {
        if (!binary) throw new IllegalArgumentException(KIND + ": a multiclass layout reads probability rows (updateVector)");
        FloatConfig.checkWeight(KIND, weight);
        FloatConfig.checkFinite(KIND, "score", score);
        if (label != 0 && label != 1) throw new IllegalArgumentException(KIND + ": label " + label + " is not 0 or 1");
        this.weight.add(weight);
        sumLabel.add(weight * label); // exact: label is 0 or 1
        sumScore.addProduct(score, weight);
        double d = score - label;
        brier.addProduct(d * d, weight);
        addLogLoss(label == 1 ? score : 1.0 - score, weight);
    }

    @Override
    public void updateVector(double label, double[] scores, double weight) {
        if (binary) throw new IllegalArgumentException(KIND + ": a binary layout reads one score per row (update)");
        FloatConfig.checkWeight(KIND, weight);
        if (scores.length != k) throw new IllegalArgumentException(KIND + ": " + scores.length + " probabilities, expected " + k);
        int y = (int) label;
        if (y != label || y < 0 || y >= k) throw new IllegalArgumentException(KIND + ": label " + label + " is not a class in [0, " + k + ")");
        this.weight.add(weight);
        for (int j = 0; j < k; j++) {
            FloatConfig.checkFinite(KIND, "probability", scores[j]);
            double d = j == y ? scores[j] - 1.0 : scores[j];
            brier.addProduct(d * d, weight);
        }
        addLogLoss(scores[y], weight);
    }

    @Override
    public void merge(JvmState other) {
        if (!(other instanceof ProbabilitySums)) throw new IllegalArgumentException("cannot merge " + other.getClass().getSimpleName() + " into " + KIND);
        ProbabilitySums o = (ProbabilitySums) other;
        cfg.checkSame(KIND, o.cfg);
        weight.merge(o.weight);
        sumLabel.merge(o.sumLabel);
        sumScore.merge(o.sumScore);
        brier.merge(o.brier);
        FloatConfig.mergeAll(logLoss, o.logLoss);
    }

    @Override
    public byte[] toBytes() {
        ExactSum.Encoded[] e = {
            ExactSum.encode(new ExactSum[] {weight}), ExactSum.encode(new ExactSum[] {sumLabel}), ExactSum.encode(new ExactSum[] {sumScore}),
            ExactSum.encode(new ExactSum[] {brier}), ExactSum.encode(logLoss),
        };
        String[] names = {"weight", "sum_label", "sum_score", "brier", "log_loss"};
        StateFrame f = new StateFrame(KIND, 1, cfg.layoutJson);
        for (int i = 0; i < 5; i++) f.exactValues(names[i], i == 4 ? new long[] {eps.length} : new long[0], e[i]);
        for (int i = 0; i < 5; i++) f.exactLimbs(names[i], e[i]);
        return f.finish();
    }
}

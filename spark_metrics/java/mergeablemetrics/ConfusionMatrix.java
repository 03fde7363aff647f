package mergeablemetrics;

/** core's {@code confusion_matrix}: K x K (row true, column predicted), exact float64 sums.
 * Config: layout JSON, then K. */
public final class ConfusionMatrix extends CountState {
    private static final long serialVersionUID = 1L;
    private final int k;

    public ConfusionMatrix(String config) {
        this(config, Integer.parseInt(Config.lines(config, 2)[1].trim()));
    }

    private ConfusionMatrix(String config, int k) {
        super(config, k * k);
        this.k = k;
    }

    @Override
    public String kind() {
        return "confusion_matrix";
    }

    @Override
    public int cell(double label, double predicted) {
        return (int) label * k + (int) predicted;
    }

    @Override
    public byte[] toBytes() {
        Frame f = new Frame(kind(), 1, layoutJson, 3);
        if (weighted()) {
            ExactSum.Encoded e = ExactSum.encode(cellSums());
            return f.doubles("matrix", e.values, k, k).exactLimbs("matrix", e).finish();
        }
        f.doubles("matrix", sumsAsDoubles(counts, "confusion_matrix.matrix"), k, k).compactLimbs("matrix");
        return f.finish();
    }
}

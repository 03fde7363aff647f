package mergeablemetrics;

/** core's {@code binary_confusion}: tp, fp, tn, fn at T sorted thresholds (exact float64 sums).
 * Config: layout JSON, then the rule ({@code >=} or {@code >}), then the thresholds (comma separated). */
public final class BinaryConfusion extends CountState {
    private static final long serialVersionUID = 1L;
    private final double[] thresholds;
    private final boolean ge;

    public BinaryConfusion(String config) {
        this(config, Config.lines(config, 3));
    }

    private BinaryConfusion(String config, String[] parts) {
        super(config, 2 * (Config.doubles(parts[2]).length + 1));
        this.thresholds = Config.doubles(parts[2]);
        if (!parts[1].equals(">=") && !parts[1].equals(">")) throw new IllegalArgumentException("threshold_rule must be '>=' or '>', got " + parts[1]);
        this.ge = parts[1].equals(">=");
    }

    @Override
    public String kind() {
        return "binary_confusion";
    }

    @Override
    public int cell(double label, double score) {
        int k = 0;
        if (ge) {
            while (k < thresholds.length && score >= thresholds[k]) k++;
        } else {
            while (k < thresholds.length && score > thresholds[k]) k++;
        }
        return (label != 0 ? thresholds.length + 1 : 0) + k;
    }

    @Override
    public byte[] toBytes() {
        int t = thresholds.length, t1 = t + 1;
        long[] tp = new long[t], fp = new long[t], tn = new long[t], fn = new long[t];
        // tp/fp: rows passing threshold j (cells above j); tn/fn: rows below it (running sums)
        long negAbove = 0, posAbove = 0;
        for (int j = t - 1; j >= 0; j--) {
            negAbove += counts[j + 1];
            posAbove += counts[t1 + j + 1];
            fp[j] = negAbove;
            tp[j] = posAbove;
        }
        long negBelow = 0, posBelow = 0;
        for (int j = 0; j < t; j++) {
            negBelow += counts[j];
            posBelow += counts[t1 + j];
            tn[j] = negBelow;
            fn[j] = posBelow;
        }
        if (weighted()) return weightedBytes();
        Frame f = new Frame(kind(), 1, layoutJson, 12);
        f.doubles("tp", sumsAsDoubles(tp, "binary_confusion.tp"), t).doubles("fp", sumsAsDoubles(fp, "binary_confusion.fp"), t);
        f.doubles("tn", sumsAsDoubles(tn, "binary_confusion.tn"), t).doubles("fn", sumsAsDoubles(fn, "binary_confusion.fn"), t);
        for (String n : new String[] {"tp", "fp", "tn", "fn"}) f.compactLimbs(n);
        return f.finish();
    }

    /** The frame of weighted rows: per cell exact weight sums, then core's running sums over the thresholds. */
    private byte[] weightedBytes() {
        int t = thresholds.length, t1 = t + 1;
        ExactSum[] cells = cellSums();
        ExactSum[] tp = new ExactSum[t], fp = new ExactSum[t], tn = new ExactSum[t], fn = new ExactSum[t];
        ExactSum negAbove = new ExactSum(), posAbove = new ExactSum();
        for (int j = t - 1; j >= 0; j--) {
            negAbove.merge(cells[j + 1]);
            posAbove.merge(cells[t1 + j + 1]);
            fp[j] = copy(negAbove);
            tp[j] = copy(posAbove);
        }
        ExactSum negBelow = new ExactSum(), posBelow = new ExactSum();
        for (int j = 0; j < t; j++) {
            negBelow.merge(cells[j]);
            posBelow.merge(cells[t1 + j]);
            tn[j] = copy(negBelow);
            fn[j] = copy(posBelow);
        }
        ExactSum.Encoded[] e = {ExactSum.encode(tp), ExactSum.encode(fp), ExactSum.encode(tn), ExactSum.encode(fn)};
        String[] names = {"tp", "fp", "tn", "fn"};
        Frame f = new Frame(kind(), 1, layoutJson, 12);
        for (int i = 0; i < 4; i++) f.doubles(names[i], e[i].values, t);
        for (int i = 0; i < 4; i++) f.exactLimbs(names[i], e[i]);
        return f.finish();
    }
}

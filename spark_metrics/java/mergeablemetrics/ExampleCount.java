package mergeablemetrics;

/** core's {@code example_count}: count (int64: rows of any weight), weight (exact float64 sum), skipped (int64). Config: layout JSON. */
public final class ExampleCount extends CountState {
    private static final long serialVersionUID = 1L;

    public ExampleCount(String config) {
        super(config, 1);
    }

    @Override
    public String kind() {
        return "example_count";
    }

    @Override
    public int cell(double label, double score) {
        return 0;
    }

    @Override
    public byte[] toBytes() {
        Frame f = new Frame(kind(), 1, layoutJson, 5);
        f.longs("count", new long[] {rows});
        if (weighted()) {
            ExactSum.Encoded e = ExactSum.encode(cellSums());
            f.doubles("weight", e.values).longs("skipped", new long[] {0L}).exactLimbs("weight", e);
            return f.finish();
        }
        f.doubles("weight", new double[] {exactCount(counts[0], "example_count.weight")});
        f.longs("skipped", new long[] {0L});
        f.compactLimbs("weight");
        return f.finish();
    }
}

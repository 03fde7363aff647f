package mergeablemetrics;

/** A state that is a sum of per-row cells (core's CELL_STATES): unweighted rows counted per cell in int64.
 * Weighted rows need exact weight sums (the float state kinds' ExactSums); until then the wrapper sends
 * only unit weights and this class refuses others. */
public abstract class CountState implements JvmState {
    private static final long serialVersionUID = 1L;
    /** largest count a float64 exact-sum field holds in its compact form */
    static final long MAX_EXACT = 1L << 53;

    protected final String config;
    protected final String layoutJson;
    public final long[] counts;

    protected CountState(String config, int numCells) {
        this.config = config;
        int nl = config.indexOf('\n');
        this.layoutJson = nl < 0 ? config : config.substring(0, nl);
        this.counts = new long[numCells];
    }

    /** The cell of one valid row. */
    public abstract int cell(double label, double score);

    /** A short name of the state kind (as core's {@code State.kind}). */
    public abstract String kind();

    @Override
    public void update(double label, double score, double weight) {
        if (weight != 1.0) throw new UnsupportedOperationException(kind() + ": weighted counts need exact weight sums (not ported to the JVM path)");
        counts[cell(label, score)]++;
    }

    @Override
    public void merge(JvmState other) {
        if (!(other instanceof CountState) || !((CountState) other).kind().equals(kind()))
            throw new IllegalArgumentException("cannot merge state " + other.getClass().getSimpleName() + " into " + kind());
        CountState o = (CountState) other;
        if (!o.config.equals(config)) throw new IllegalArgumentException("cannot merge " + kind() + " states: different layout " + layoutJson + " != " + o.layoutJson);
        for (int i = 0; i < counts.length; i++) counts[i] = Math.addExact(counts[i], o.counts[i]);
    }

    /** Add raw cell counts (the UserDefinedAggregateFunction form keeps its buffer as cells). */
    public void addCells(long[] cells) {
        for (int i = 0; i < counts.length; i++) counts[i] = Math.addExact(counts[i], cells[i]);
    }

    static double exactCount(long c, String what) {
        if (c > MAX_EXACT) throw new ArithmeticException(what + ": a count past 2**53 needs exact limbs (not ported to the JVM path)");
        return (double) c;
    }

    static double[] sumsAsDoubles(long[] v, String what) {
        double[] d = new double[v.length];
        for (int i = 0; i < v.length; i++) d[i] = exactCount(v[i], what);
        return d;
    }

    /** Whether a label is an integer in [0, k). */
    static boolean isClass(double v, int k) {
        return v >= 0 && v < k && v == Math.floor(v);
    }
}

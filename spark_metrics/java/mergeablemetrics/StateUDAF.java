package mergeablemetrics;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.expressions.MutableAggregationBuffer;
import org.apache.spark.sql.expressions.UserDefinedAggregateFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/** The UserDefinedAggregateFunction form of {@link StateAggregator}, for Spark Connect (a no-argument class:
 * {@code spark.udf.registerJavaUDAF} or SQL {@code CREATE FUNCTION}). Arguments: the spec string (a literal),
 * label, score, weight (doubles; null where the spec has none). The buffer holds the states' cells as
 * little-endian int64s, so count kinds only (the others keep the Arrow path under Connect). */
@SuppressWarnings("deprecation")
public final class StateUDAF extends UserDefinedAggregateFunction {
    private static final long serialVersionUID = 1L;
    private transient String lastText;
    private transient Spec lastSpec;
    private transient CountState[] lastStates;
    private transient int lastCells;

    private void parse(String text) {
        if (text.equals(lastText)) return;
        Spec spec = new Spec(text);
        JvmState[] states = spec.zero();
        CountState[] counts = new CountState[states.length];
        int n = 0;
        for (int i = 0; i < states.length; i++) {
            if (!(states[i] instanceof CountState))
                throw new UnsupportedOperationException("state kind " + spec.kinds[i] + " is not a count kind: the UserDefinedAggregateFunction form folds count kinds only");
            counts[i] = (CountState) states[i];
            n += counts[i].counts.length;
        }
        lastSpec = spec;
        lastStates = counts;
        lastCells = n;
        lastText = text;
    }

    @Override
    public StructType inputSchema() {
        return new StructType().add("spec", DataTypes.StringType).add("label", DataTypes.DoubleType)
            .add("score", DataTypes.DoubleType).add("weight", DataTypes.DoubleType);
    }

    @Override
    public StructType bufferSchema() {
        return new StructType().add("spec", DataTypes.StringType).add("cells", DataTypes.BinaryType);
    }

    @Override
    public DataType dataType() {
        return DataTypes.BinaryType;
    }

    @Override
    public boolean deterministic() {
        return true;
    }

    @Override
    public void initialize(MutableAggregationBuffer buffer) {
        buffer.update(0, null);
        buffer.update(1, new byte[0]);
    }

    private static long get(byte[] b, int i) {
        long v = 0;
        for (int j = 7; j >= 0; j--) v = (v << 8) | (b[8 * i + j] & 0xFFL);
        return v;
    }

    private static void put(byte[] b, int i, long v) {
        for (int j = 0; j < 8; j++) b[8 * i + j] = (byte) (v >>> (8 * j));
    }

    @Override
    public void update(MutableAggregationBuffer buffer, Row input) {
        String text = input.getString(0);
        parse(text);
        byte[] cells = buffer.getAs(1);
        if (cells.length == 0) {
            cells = new byte[8 * lastCells];
            buffer.update(0, text);
        }
        Double y = input.isNullAt(1) ? null : input.getDouble(1);
        Double s = input.isNullAt(2) ? null : input.getDouble(2);
        Double w = input.isNullAt(3) ? null : input.getDouble(3);
        double label = lastSpec.label(y), score = lastSpec.score(s), weight = lastSpec.weight(w);
        if (weight != 1.0) throw new UnsupportedOperationException("weighted counts need exact weight sums (not ported to the JVM path)");
        int base = 0;
        for (CountState c : lastStates) {
            int at = base + c.cell(label, score);
            put(cells, at, get(cells, at) + 1);
            base += c.counts.length;
        }
        buffer.update(1, cells);
    }

    @Override
    public void merge(MutableAggregationBuffer buffer, Row other) {
        byte[] b = other.getAs(1);
        if (b.length == 0) return;
        byte[] a = buffer.getAs(1);
        if (a.length == 0) {
            buffer.update(0, other.getString(0));
            buffer.update(1, b.clone());
            return;
        }
        byte[] out = a.clone();
        for (int i = 0; i < a.length / 8; i++) put(out, i, Math.addExact(get(a, i), get(b, i)));
        buffer.update(1, out);
    }

    @Override
    public Object evaluate(Row buffer) {
        byte[] cells = buffer.getAs(1);
        if (cells.length == 0) return null; // no rows: the Python side reads the zero states
        parse(buffer.getString(0));
        JvmState[] states = lastSpec.zero();
        int base = 0;
        for (JvmState st : states) {
            CountState c = (CountState) st;
            long[] part = new long[c.counts.length];
            for (int i = 0; i < part.length; i++) part[i] = get(cells, base + i);
            c.addCells(part);
            base += part.length;
        }
        return Spec.pack(states);
    }
}

package mergeablemetrics;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.ObjectStreamClass;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.expressions.MutableAggregationBuffer;
import org.apache.spark.sql.expressions.UserDefinedAggregateFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/** {@link BlockStateUDAF} for a {@link Spec#SCORE_ROW} spec (Spark Connect): arguments the spec string (a
 * literal), label, scores ({@code array<double>} of K entries), weight (null where the spec has none). The
 * buffer holds the states Java-serialised plus a block of pending checked rows (label, weight, K scores as
 * little-endian doubles), folded {@link BlockStateUDAF#BLOCK} at a time: the same bytes as row by row. */
@SuppressWarnings("deprecation")
public final class RowBlockUDAF extends UserDefinedAggregateFunction {
    private static final long serialVersionUID = 1L;
    private transient String lastText;
    private transient Spec lastSpec;

    private Spec spec(String text) {
        if (!text.equals(lastText)) {
            lastSpec = new Spec(text);
            lastText = text;
        }
        return lastSpec;
    }

    @Override
    public StructType inputSchema() {
        return new StructType().add("spec", DataTypes.StringType).add("label", DataTypes.DoubleType)
            .add("scores", DataTypes.createArrayType(DataTypes.DoubleType, true)).add("weight", DataTypes.DoubleType);
    }

    @Override
    public StructType bufferSchema() {
        return new StructType().add("spec", DataTypes.StringType).add("states", DataTypes.BinaryType)
            .add("pending", DataTypes.BinaryType).add("count", DataTypes.IntegerType);
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
        buffer.update(2, new byte[0]);
        buffer.update(3, 0);
    }

    private static ByteBuffer rows(byte[] b) {
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static byte[] save(JvmState[] states) {
        try (ByteArrayOutputStream bytes = new ByteArrayOutputStream(); ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(states);
            out.flush();
            return bytes.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static final class Input extends ObjectInputStream {
        Input(InputStream in) throws IOException {
            super(in);
        }

        @Override
        protected Class<?> resolveClass(ObjectStreamClass desc) throws IOException, ClassNotFoundException {
            try {
                return Class.forName(desc.getName(), false, RowBlockUDAF.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                return super.resolveClass(desc);
            }
        }
    }

    private static JvmState[] load(Spec spec, byte[] data) {
        if (data == null || data.length == 0) return spec.zero();
        try (Input in = new Input(new ByteArrayInputStream(data))) {
            return (JvmState[]) in.readObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void foldPending(Spec spec, JvmState[] states, byte[] pending, int count) {
        ByteBuffer in = rows(pending);
        int width = 8 * (2 + spec.rowWidth());
        for (int r = 0; r < count; r++) {
            int at = r * width;
            double y = in.getDouble(at), w = in.getDouble(at + 8);
            double[] s = new double[spec.rowWidth()];
            for (int i = 0; i < s.length; i++) s[i] = in.getDouble(at + 16 + 8 * i);
            Spec.foldChecked(states, y, s, w);
        }
    }

    @Override
    public void update(MutableAggregationBuffer buffer, Row input) {
        String text = input.getString(0);
        Spec spec = spec(text);
        Double label = input.isNullAt(1) ? null : input.getDouble(1);
        java.util.List<Object> row = input.isNullAt(2) ? null : input.getList(2);
        double y = spec.scoreMode == Spec.OUTPUT_ROWS ? 0.0 : spec.label(label);
        double[] s = spec.scoreMode == Spec.OUTPUT_ROWS ? spec.outputRow(label, row) : spec.scoreRow(row);
        double w = spec.weight(input.isNullAt(3) ? null : input.getDouble(3));
        if (buffer.isNullAt(0)) buffer.update(0, text);
        int width = 8 * (2 + spec.rowWidth());
        byte[] pending = buffer.getAs(2);
        int count = buffer.getInt(3);
        if ((count + 1) * width > pending.length) { // grow by doubling (a fresh array: never one another buffer holds)
            byte[] grown = new byte[Math.min(BlockStateUDAF.BLOCK, Math.max(64, 2 * (pending.length / width))) * width];
            System.arraycopy(pending, 0, grown, 0, count * width);
            pending = grown;
        }
        ByteBuffer out = rows(pending);
        out.putDouble(count * width, y).putDouble(count * width + 8, w);
        for (int i = 0; i < s.length; i++) out.putDouble(count * width + 16 + 8 * i, s[i]);
        count++;
        if (count == BlockStateUDAF.BLOCK) {
            JvmState[] states = load(spec, buffer.getAs(1));
            foldPending(spec, states, pending, count);
            buffer.update(1, save(states));
            pending = new byte[0];
            count = 0;
        }
        buffer.update(2, pending);
        buffer.update(3, count);
    }

    private JvmState[] states(Row b) {
        if (b.isNullAt(0)) return null;
        Spec spec = spec(b.getString(0));
        JvmState[] states = load(spec, b.getAs(1));
        foldPending(spec, states, b.getAs(2), b.getInt(3));
        return states;
    }

    @Override
    public void merge(MutableAggregationBuffer buffer, Row other) {
        JvmState[] b = states(other);
        if (b == null) return;
        JvmState[] a = states(buffer);
        if (a == null) {
            buffer.update(0, other.getString(0));
            a = b;
        } else {
            Spec.mergeInto(a, b);
        }
        buffer.update(1, save(a));
        buffer.update(2, new byte[0]);
        buffer.update(3, 0);
    }

    @Override
    public Object evaluate(Row buffer) {
        JvmState[] states = states(buffer);
        return states == null ? null : Spec.pack(states);
    }
}

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

/** The UserDefinedAggregateFunction form of {@link StateAggregator} for every state kind (the float kinds
 * included), for Spark Connect. Arguments as {@link StateUDAF}'s: the spec string (a literal), label, score,
 * weight (doubles; null where the spec has none).
 *
 * <p>The buffer: the spec, the states Java-serialised (empty: the zero states), and the pending rows (checked
 * label, score, weight as little-endian doubles) with their count. A row is checked and appended to the pending
 * block; a full block ({@link #BLOCK} rows) is folded into the states, which are then serialised again, so the
 * states are (de)serialised once per block, not per row. The pending array grows by doubling, so a small group's
 * partial buffer stays small. States are exact monoids: folding in blocks gives the same bytes as row by row. */
@SuppressWarnings("deprecation")
public final class BlockStateUDAF extends UserDefinedAggregateFunction {
    private static final long serialVersionUID = 1L;
    /** rows folded per (de)serialisation of the states */
    static final int BLOCK = 8192;
    private static final int ROW = 24;
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
        return new StateUDAF().inputSchema(); // the same arguments
    }

    @Override
    public StructType bufferSchema() {
        return new StructType().add("spec", DataTypes.StringType).add("states", DataTypes.BinaryType)
            .add("pending", DataTypes.BinaryType).add("count", DataTypes.IntegerType);
    }

    @Override
    public DataType dataType() {
        return new StateUDAF().dataType(); // the states' packed bytes
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

    /** Reads the states with this class's loader (a Connect session's artifact class loader). */
    private static final class Input extends ObjectInputStream {
        Input(InputStream in) throws IOException {
            super(in);
        }

        @Override
        protected Class<?> resolveClass(ObjectStreamClass desc) throws IOException, ClassNotFoundException {
            try {
                return Class.forName(desc.getName(), false, BlockStateUDAF.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                return super.resolveClass(desc);
            }
        }
    }

    private JvmState[] load(Spec spec, byte[] data) {
        if (data == null || data.length == 0) return spec.zero();
        try (Input in = new Input(new ByteArrayInputStream(data))) {
            return (JvmState[]) in.readObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void foldPending(JvmState[] states, byte[] pending, int count) {
        ByteBuffer in = rows(pending);
        for (int r = 0; r < count; r++) {
            int at = r * ROW;
            double y = in.getDouble(at), s = in.getDouble(at + 8), w = in.getDouble(at + 16);
            for (JvmState st : states) st.update(y, s, w);
        }
    }

    @Override
    public void update(MutableAggregationBuffer buffer, Row input) {
        String text = input.getString(0);
        Spec spec = spec(text);
        // the checks in Python's order (label, score, weight), as Spec.fold
        double y = spec.label(input.isNullAt(1) ? null : input.getDouble(1));
        double s = spec.score(input.isNullAt(2) ? null : input.getDouble(2));
        double w = spec.weight(input.isNullAt(3) ? null : input.getDouble(3));
        if (buffer.isNullAt(0)) buffer.update(0, text);
        byte[] pending = buffer.getAs(2);
        int count = buffer.getInt(3);
        if ((count + 1) * ROW > pending.length) { // grow by doubling (a fresh array: never one another buffer holds)
            byte[] grown = new byte[Math.min(BLOCK, Math.max(64, 2 * (pending.length / ROW))) * ROW];
            System.arraycopy(pending, 0, grown, 0, count * ROW);
            pending = grown;
        }
        rows(pending).putDouble(count * ROW, y).putDouble(count * ROW + 8, s).putDouble(count * ROW + 16, w);
        count++;
        if (count == BLOCK) {
            JvmState[] states = load(spec, buffer.getAs(1));
            foldPending(states, pending, count);
            buffer.update(1, save(states));
            pending = new byte[0];
            count = 0;
        }
        buffer.update(2, pending);
        buffer.update(3, count);
    }

    /** The states of a buffer row with its pending rows folded in (null: a buffer without rows). */
    private JvmState[] states(Row b) {
        if (b.isNullAt(0)) return null;
        Spec spec = spec(b.getString(0));
        JvmState[] states = load(spec, b.getAs(1));
        foldPending(states, b.getAs(2), b.getInt(3));
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
        return states == null ? null : Spec.pack(states); // null (no rows): the Python side reads the zero states
    }
}

package mergeablemetrics;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/** Reader of the aggregates' output ({@link Spec#pack}: u32 length + core state frame, per state) and of one
 * frame's fields (core/states/codec.py, version 3): float64 fields as doubles, int64 fields as longs. */
public final class StateReader {
    private StateReader() {}

    /** One decoded frame: its kind and its fields by name (double[] or long[]). */
    public static final class State {
        public final String kind;
        final Map<String, Object> fields = new HashMap<>();

        State(String kind) {
            this.kind = kind;
        }

        public double[] doubles(String name) {
            Object v = fields.get(name);
            if (!(v instanceof double[])) throw new IllegalArgumentException("state " + kind + " has no float64 field " + name);
            return (double[]) v;
        }

        public long[] longs(String name) {
            Object v = fields.get(name);
            if (!(v instanceof long[])) throw new IllegalArgumentException("state " + kind + " has no int64 field " + name);
            return (long[]) v;
        }
    }

    /** The {@code index}-th state frame of packed aggregate output. */
    public static State state(byte[] packed, int index) {
        ByteBuffer b = ByteBuffer.wrap(packed).order(ByteOrder.LITTLE_ENDIAN);
        int at = 0;
        for (int i = 0; i < index; i++) at += 4 + b.getInt(at);
        int n = b.getInt(at);
        return frame(ByteBuffer.wrap(packed, at + 4, n).slice().order(ByteOrder.LITTLE_ENDIAN));
    }

    private static String str(ByteBuffer b, int lenBytes) {
        int n = lenBytes == 2 ? Short.toUnsignedInt(b.getShort()) : b.getInt();
        byte[] s = new byte[n];
        b.get(s);
        return new String(s, StandardCharsets.UTF_8);
    }

    static State frame(ByteBuffer b) {
        if (b.get() != 'M' || b.get() != 'M' || b.get() != 'S' || b.get() != 3) throw new IllegalArgumentException("not a version-3 state frame");
        State st = new State(str(b, 2));
        b.get(); // kind version
        str(b, 4); // layout JSON
        int nFields = Short.toUnsignedInt(b.getShort());
        for (int f = 0; f < nFields; f++) {
            String name = str(b, 2);
            int code = b.get();
            int ndim = b.get();
            long size = 1;
            for (int d = 0; d < ndim; d++) size *= b.getLong();
            int n = Math.toIntExact(size);
            if (code == 1) {
                double[] v = new double[n];
                for (int i = 0; i < n; i++) v[i] = b.getDouble();
                st.fields.put(name, v);
            } else if (code == 2) {
                long[] v = new long[n];
                for (int i = 0; i < n; i++) v[i] = b.getLong();
                st.fields.put(name, v);
            } else {
                throw new IllegalArgumentException("state " + st.kind + ": field " + name + " has dtype code " + code + " (not read here)");
            }
        }
        return st;
    }
}

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.charset.StandardCharsets;
import mergeablemetrics.JvmState;
import mergeablemetrics.States;

/**
 * Test driver (tests/spark_metrics/test_adversarial_jvm_ports.py): states of one kind driven by a script that
 * interleaves row updates, merges, Java serialisation round trips and mid-stream {@code toBytes} (what Spark's
 * sort-based aggregation fallback and partial buffers do), printing the bytes at every observation.
 *
 * <pre>
 * case KIND CONFIG_HEX NSTATES
 * u I LABEL SCORE WEIGHT        (doubles as 16 hex digits of their bits) update state I
 * v I LABEL WEIGHT S1 S2 ...    vector update (class score rows)
 * m I J                         state I merges state J
 * r I                           state I replaced by its Java serialisation round trip
 * b I                           print "B hex" of state I's bytes (and go on folding)
 * end                           print "."
 * </pre>
 * An update or merge that throws prints "E message".
 */
public final class InterleaveDriver {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        JvmState[] st = null;
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) continue;
            String[] t = line.split(" ");
            try {
                switch (t[0]) {
                    case "case": {
                        String config = new String(unhex(t[2]), StandardCharsets.UTF_8);
                        st = new JvmState[Integer.parseInt(t[3])];
                        for (int i = 0; i < st.length; i++) st[i] = States.create(t[1], config);
                        break;
                    }
                    case "u":
                        st[Integer.parseInt(t[1])].update(d(t[2]), d(t[3]), d(t[4]));
                        break;
                    case "v": {
                        double[] s = new double[t.length - 4];
                        for (int i = 0; i < s.length; i++) s[i] = d(t[4 + i]);
                        st[Integer.parseInt(t[1])].updateVector(d(t[2]), s, d(t[3]));
                        break;
                    }
                    case "m":
                        st[Integer.parseInt(t[1])].merge(st[Integer.parseInt(t[2])]);
                        break;
                    case "r":
                        st[Integer.parseInt(t[1])] = roundTrip(st[Integer.parseInt(t[1])]);
                        break;
                    case "b":
                        out.append("B ").append(hex(st[Integer.parseInt(t[1])].toBytes())).append('\n');
                        break;
                    case "end":
                        out.append(".\n");
                        break;
                    default:
                        throw new IllegalStateException("bad line " + line);
                }
            } catch (RuntimeException e) {
                out.append("E ").append(String.valueOf(e.getMessage()).replace('\n', ' ')).append('\n');
            }
        }
        System.out.print(out);
    }

    static double d(String h) {
        return Double.longBitsToDouble(Long.parseUnsignedLong(h, 16));
    }

    static JvmState roundTrip(JvmState s) throws IOException, ClassNotFoundException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        try (ObjectOutputStream o = new ObjectOutputStream(b)) {
            o.writeObject(s);
        }
        try (ObjectInputStream i = new ObjectInputStream(new ByteArrayInputStream(b.toByteArray()))) {
            return (JvmState) i.readObject();
        }
    }

    static byte[] unhex(String s) {
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return b;
    }

    private static final char[] DIGITS = "0123456789abcdef".toCharArray();

    static String hex(byte[] b) {
        char[] c = new char[2 * b.length];
        for (int i = 0; i < b.length; i++) {
            c[2 * i] = DIGITS[(b[i] >> 4) & 15];
            c[2 * i + 1] = DIGITS[b[i] & 15];
        }
        return new String(c);
    }
}

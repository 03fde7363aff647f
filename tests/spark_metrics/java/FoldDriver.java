import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import mergeablemetrics.ExactSum;
import mergeablemetrics.States;
import mergeablemetrics.JvmState;

/**
 * Test driver of the JVM state kinds (count and float kinds): reads cases from stdin, folds each case's rows per
 * partition, merges the partitions in the given order into a fresh state and prints one line per
 * case (hex state bytes, or {@code ERR <message>}).
 *
 * <pre>
 * case KIND CONFIG_HEX NPARTS ORDER(comma partitions)   CONFIG_HEX: the UTF-8 config in hex
 * PART V1 V2 ...                                        values: 16-hex-digit raw double bits
 * end
 * </pre>
 * Kind {@code exact}: V1 the group (0..m-1, m = config), V2.. 1 to 3 factors; prints
 * {@code values-hex exp limbs,...} of the canonical {@link ExactSum#encode}. Other kinds: V1 label,
 * V2 score, V3 weight, V4.. (optional) a score vector for {@code updateVector}. The states of the
 * even-numbered partitions go through Java serialisation before the merge (as Spark's partial aggregation
 * buffers do). With the argument {@code size}, each line is {@code <state bytes> <Java-serialised bytes>}: the
 * lengths of the merged state's encoding and of its Java serialisation.
 */
public class FoldDriver {
    static boolean sizes;

    public static void main(String[] args) throws Exception {
        sizes = args.length > 0 && args[0].equals("size");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        StringBuilder out = new StringBuilder();
        while ((line = in.readLine()) != null) {
            if (!line.startsWith("case ")) continue;
            String[] h = line.split(" ");
            String kind = h[1], config = new String(unhex(h[2]), StandardCharsets.UTF_8);
            int nparts = Integer.parseInt(h[3]);
            List<double[]> rows = new ArrayList<>();
            List<Integer> parts = new ArrayList<>();
            while (!(line = in.readLine()).equals("end")) {
                String[] t = line.split(" ");
                parts.add(Integer.parseInt(t[0]));
                double[] v = new double[t.length - 1];
                for (int i = 1; i < t.length; i++) v[i - 1] = Double.longBitsToDouble(Long.parseUnsignedLong(t[i], 16));
                rows.add(v);
            }
            try {
                out.append(kind.equals("exact") ? exact(config, nparts, h[4], rows, parts) : fold(kind, config, nparts, h[4], rows, parts));
            } catch (RuntimeException e) {
                out.append("ERR ").append(e.getClass().getSimpleName()).append(": ").append(String.valueOf(e.getMessage()).replace('\n', ' '));
            }
            out.append('\n');
        }
        System.out.print(out);
    }

    static int[] order(String s) {
        if (s.equals("-")) return new int[0];
        String[] t = s.split(",");
        int[] o = new int[t.length];
        for (int i = 0; i < t.length; i++) o[i] = Integer.parseInt(t[i]);
        return o;
    }

    static String fold(String kind, String config, int nparts, String ord, List<double[]> rows, List<Integer> parts) {
        JvmState[] st = new JvmState[nparts];
        for (int p = 0; p < nparts; p++) st[p] = States.create(kind, config);
        for (int i = 0; i < rows.size(); i++) {
            double[] v = rows.get(i);
            JvmState s = st[parts.get(i)];
            if (v.length > 3) s.updateVector(v[0], java.util.Arrays.copyOfRange(v, 3, v.length), v[2]);
            else s.update(v[0], v[1], v[2]);
        }
        for (int p = 0; p < nparts; p += 2) st[p] = roundTrip(st[p]);
        JvmState acc = States.create(kind, config);
        for (int p : order(ord)) acc.merge(st[p]);
        if (sizes) return acc.toBytes().length + " " + serialized(acc).length;
        return hex(acc.toBytes());
    }

    static byte[] serialized(Object o) {
        try {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            try (ObjectOutputStream out = new ObjectOutputStream(b)) {
                out.writeObject(o);
            }
            return b.toByteArray();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    static JvmState[] roundTripAll(JvmState[] s) {
        JvmState[] out = new JvmState[s.length];
        for (int i = 0; i < s.length; i++) out[i] = roundTrip(s[i]);
        return out;
    }

    static JvmState roundTrip(JvmState s) {
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(serialized(s)))) {
            return (JvmState) in.readObject();
        } catch (IOException | ClassNotFoundException e) {
            throw new IllegalStateException(e);
        }
    }

    static String exact(String config, int nparts, String ord, List<double[]> rows, List<Integer> parts) {
        int m = Integer.parseInt(config.trim());
        ExactSum[][] st = new ExactSum[nparts][m];
        for (ExactSum[] a : st) for (int g = 0; g < m; g++) a[g] = new ExactSum();
        for (int i = 0; i < rows.size(); i++) {
            double[] v = rows.get(i);
            ExactSum s = st[parts.get(i)][(int) v[0]];
            if (v.length == 2) s.add(v[1]);
            else if (v.length == 3) s.addProduct(v[1], v[2]);
            else s.addProduct(v[1], v[2], v[3]);
        }
        ExactSum[] acc = new ExactSum[m];
        for (int g = 0; g < m; g++) acc[g] = new ExactSum();
        for (int p : order(ord)) for (int g = 0; g < m; g++) acc[g].merge(st[p][g]);
        ExactSum.Encoded e = ExactSum.encode(acc);
        StringBuilder s = new StringBuilder();
        for (double x : e.values) s.append(String.format("%016x", Double.doubleToRawLongBits(x)));
        s.append(' ').append(e.exp).append(' ');
        for (int i = 0; i < e.limbs.length; i++) s.append(i > 0 ? "," : "").append(e.limbs[i]);
        return s.toString();
    }

    static byte[] unhex(String s) {
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return b;
    }

    static String hex(byte[] b) {
        StringBuilder s = new StringBuilder(b.length * 2);
        for (byte x : b) s.append(String.format("%02x", x));
        return s.toString();
    }
}

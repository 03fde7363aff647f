import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import mergeablemetrics.JvmState;
import mergeablemetrics.Spec;

/**
 * Test driver of a score-row {@link Spec} (no Spark): folds each case's rows with {@link Spec#foldRow}, the checks the
 * Spark aggregates run (label, score row, weight), per partition, merges the partitions in the given order and prints
 * one line per case: the packed states in hex ({@link Spec#pack}), or {@code ERR <message>} of the first invalid row.
 *
 * <pre>
 * case SPEC_HEX NPARTS ORDER(comma partitions)
 * PART LABEL WEIGHT N E1 .. EN     values: 16-hex-digit raw double bits or "null"; N -1: a null row
 * end
 * </pre>
 */
public class RowFoldDriver {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            if (!line.startsWith("case ")) continue;
            String[] h = line.split(" ");
            Spec spec = new Spec(new String(FoldDriver.unhex(h[1]), StandardCharsets.UTF_8));
            int nparts = Integer.parseInt(h[2]);
            JvmState[][] st = new JvmState[nparts][];
            for (int p = 0; p < nparts; p++) st[p] = spec.zero();
            String result = null;
            while (!(line = in.readLine()).equals("end")) {
                if (result != null) continue;
                String[] t = line.split(" ");
                int n = Integer.parseInt(t[3]);
                List<Double> row = null;
                if (n >= 0) {
                    row = new ArrayList<>();
                    for (int i = 0; i < n; i++) row.add(value(t[4 + i]));
                }
                try {
                    spec.foldRow(st[Integer.parseInt(t[0])], value(t[1]), row, value(t[2]));
                } catch (RuntimeException e) {
                    result = "ERR " + String.valueOf(e.getMessage()).replace('\n', ' ');
                }
            }
            if (result == null) {
                JvmState[] acc = spec.zero();
                for (int p : FoldDriver.order(h[3])) {
                    st[p] = FoldDriver.roundTripAll(st[p]);
                    Spec.mergeInto(acc, st[p]);
                }
                result = FoldDriver.hex(Spec.pack(acc));
            }
            out.append(result).append('\n');
        }
        System.out.print(out);
    }

    static Double value(String s) {
        return s.equals("null") ? null : Double.longBitsToDouble(Long.parseUnsignedLong(s, 16));
    }
}

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import mergeablemetrics.Finish;

/** Reads lines {@code <metric description hex> <packed states hex or ->} and prints the bits of
 * {@code Finish.value} per line (16 hex digits, or {@code null}). */
public final class FinishDriver {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        HexFormat hex = HexFormat.of();
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null;) {
            if (line.isBlank()) continue;
            String[] p = line.trim().split(" ");
            String metric = new String(hex.parseHex(p[0]), StandardCharsets.UTF_8);
            byte[] packed = p[1].equals("-") ? null : hex.parseHex(p[1]);
            Double v = Finish.value(metric, packed);
            out.append(v == null ? "null" : String.format("%016x", Double.doubleToRawLongBits(v))).append('\n');
        }
        System.out.print(out);
    }
}

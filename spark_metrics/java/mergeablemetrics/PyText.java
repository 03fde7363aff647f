package mergeablemetrics;

import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;

/** Numbers written as core's messages write them (Python's {@code repr} and {@code :.6g} of a float, numpy's
 * {@code np.round(row, 6).tolist()}), so a message of the JVM path names a value as the Arrow path does. */
final class PyText {
    private PyText() {}

    /** The decimal digits (no leading zeros; "0" for zero) and decimal point position of {@code d}: value = 0.digits x 10^decpt. */
    private static Object[] digits(BigDecimal d) {
        BigDecimal s = d.stripTrailingZeros();
        String digits = s.unscaledValue().abs().toString();
        return new Object[] {digits, digits.length() - s.scale()};
    }

    private static String special(double v) {
        if (Double.isNaN(v)) return "nan";
        if (Double.isInfinite(v)) return v > 0 ? "inf" : "-inf";
        return null;
    }

    private static String exponent(int e) {
        String a = Integer.toString(Math.abs(e));
        return (e < 0 ? "e-" : "e+") + (a.length() < 2 ? "0" + a : a);
    }

    /** Python's {@code repr(float(v))}: the shortest digits that read back as {@code v}; fixed notation for a
     * decimal point position in (-4, 16], else {@code 1e-07} style. */
    static String repr(double v) {
        String sp = special(v);
        if (sp != null) return sp;
        if (v == 0) return (1 / v < 0) ? "-0.0" : "0.0";
        BigDecimal exact = new BigDecimal(v), shortest = exact;
        for (int p = 1; p <= 17; p++) {
            BigDecimal r = exact.round(new MathContext(p, RoundingMode.HALF_EVEN));
            if (r.doubleValue() == v) {
                shortest = r;
                break;
            }
        }
        Object[] dp = digits(shortest);
        String ds = (String) dp[0];
        int decpt = (Integer) dp[1];
        String sign = v < 0 ? "-" : "";
        if (decpt > -4 && decpt <= 16) {
            if (decpt <= 0) return sign + "0." + "0".repeat(-decpt) + ds;
            if (decpt >= ds.length()) return sign + ds + "0".repeat(decpt - ds.length()) + ".0";
            return sign + ds.substring(0, decpt) + "." + ds.substring(decpt);
        }
        return sign + ds.charAt(0) + (ds.length() > 1 ? "." + ds.substring(1) : "") + exponent(decpt - 1);
    }

    /** Python's {@code format(v, ".6g")}: 6 significant digits (correctly rounded, half to even), trailing zeros
     * removed; fixed notation for exponents in [-4, 6). */
    static String g6(double v) {
        String sp = special(v);
        if (sp != null) return sp;
        if (v == 0) return (1 / v < 0) ? "-0" : "0";
        Object[] dp = digits(new BigDecimal(v).round(new MathContext(6, RoundingMode.HALF_EVEN)));
        String ds = (String) dp[0];
        int x = (Integer) dp[1] - 1;
        String sign = v < 0 ? "-" : "";
        if (x >= -4 && x < 6) {
            int decpt = x + 1;
            if (decpt <= 0) return sign + "0." + "0".repeat(-decpt) + ds;
            if (decpt >= ds.length()) return sign + ds + "0".repeat(decpt - ds.length());
            return sign + ds.substring(0, decpt) + "." + ds.substring(decpt);
        }
        return sign + ds.charAt(0) + (ds.length() > 1 ? "." + ds.substring(1) : "") + exponent(x);
    }

    /** numpy's {@code np.round(x, 6)}: {@code rint(x * 1e6) / 1e6}. */
    static double round6(double x) {
        return Math.rint(x * 1e6) / 1e6;
    }

    /** A row as core's messages show it: {@code np.round(v, 6).tolist()} for up to 8 entries, else the first 7 of
     * them and {@code ... (K entries)}, quoted (core's message shows that text with {@code !r}). */
    static String roundedRow(double[] v) {
        int shown = v.length <= 8 ? v.length : 7;
        StringBuilder b = new StringBuilder(v.length <= 8 ? "[" : "'[");
        for (int i = 0; i < shown; i++) b.append(i == 0 ? "" : ", ").append(repr(round6(v[i])));
        b.append(']');
        if (v.length > 8) b.append(" ... (").append(v.length).append(" entries)'"); // core writes it as a string: its repr
        return b.toString();
    }
}

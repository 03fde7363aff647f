package mergeablemetrics;

import java.util.HashMap;
import java.util.Map;

/**
 * A float kind's configuration as spark_metrics/jvm_float_kinds.py writes it: the first line is the
 * state's layout JSON (written verbatim into the state bytes), then {@code key=value} lines
 * (numbers as Python's {@code float.hex()}, lists comma-separated).
 */
final class FloatConfig implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    final String config;
    final String layoutJson;
    private final Map<String, String> values = new HashMap<>();

    FloatConfig(String kind, String config) {
        this.config = config;
        String[] lines = config.split("\n");
        layoutJson = lines[0];
        for (int i = 1; i < lines.length; i++) {
            int eq = lines[i].indexOf('=');
            if (eq < 0) throw new IllegalArgumentException(kind + ": bad config line " + lines[i]);
            values.put(lines[i].substring(0, eq), lines[i].substring(eq + 1));
        }
    }

    String get(String key) {
        String v = values.get(key);
        if (v == null) throw new IllegalArgumentException("config setting " + key + " missing");
        return v;
    }

    int integer(String key) {
        return Integer.parseInt(get(key));
    }

    boolean bool(String key) {
        return get(key).equals("1");
    }

    double[] doubles(String key) {
        String v = get(key);
        if (v.isEmpty()) return new double[0];
        String[] t = v.split(",");
        double[] out = new double[t.length];
        for (int i = 0; i < t.length; i++) out[i] = Double.parseDouble(t[i]);
        return out;
    }

    int[] ints(String key) {
        String v = get(key);
        if (v.isEmpty()) return new int[0];
        String[] t = v.split(",");
        int[] out = new int[t.length];
        for (int i = 0; i < t.length; i++) out[i] = Integer.parseInt(t[i]);
        return out;
    }

    /** IllegalArgumentException naming the first differing setting unless {@code other} has the same configuration. */
    void checkSame(String kind, FloatConfig other) {
        if (config.equals(other.config)) return;
        for (Map.Entry<String, String> e : values.entrySet()) {
            String o = other.values.get(e.getKey());
            if (!e.getValue().equals(o)) throw new IllegalArgumentException("cannot merge " + kind + " states: different " + e.getKey() + " " + e.getValue() + " != " + o);
        }
        throw new IllegalArgumentException("cannot merge " + kind + " states: different layout " + layoutJson + " != " + other.layoutJson);
    }

    static ExactSum[] sums(int n) {
        ExactSum[] s = new ExactSum[n];
        for (int i = 0; i < n; i++) s[i] = new ExactSum();
        return s;
    }

    static void mergeAll(ExactSum[] a, ExactSum[] b) {
        for (int i = 0; i < a.length; i++) a[i].merge(b[i]);
    }

    static void checkWeight(String kind, double w) {
        if (!(w >= 0) || Double.isInfinite(w)) throw new IllegalArgumentException(kind + ": weight " + w + " is not a finite number >= 0");
    }

    static void checkFinite(String kind, String what, double x) {
        if (!Double.isFinite(x)) throw new IllegalArgumentException(kind + ": " + what + " " + x + " is not finite");
    }
}

package mergeablemetrics;

/** Parsing of the configuration strings the Python side builds (lines; numbers as Python's repr). */
public final class Config {
    private Config() {}

    public static String[] lines(String config, int n) {
        String[] parts = config.split("\n", -1);
        if (parts.length < n) throw new IllegalArgumentException("configuration needs " + n + " lines, got " + parts.length + ": " + config);
        return parts;
    }

    public static double[] doubles(String csv) {
        if (csv.isEmpty()) return new double[0];
        String[] p = csv.split(",");
        double[] out = new double[p.length];
        for (int i = 0; i < p.length; i++) out[i] = Double.parseDouble(p[i].trim());
        return out;
    }
}

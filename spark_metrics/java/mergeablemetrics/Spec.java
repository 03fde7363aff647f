package mergeablemetrics;

import java.io.ByteArrayOutputStream;
import java.io.Serializable;

/** What one JVM aggregate folds: the input checks (Python's rules, column names in the messages) and the
 * states' (kind, config) pairs. Built from one string (fields separated by U+001F), so a no-argument
 * function (Spark Connect's {@code registerJavaUDAF}) can take it as a literal first argument. */
public final class Spec implements Serializable {
    private static final long serialVersionUID = 1L;
    /** what the score column holds (and, for {@link #VALUES}, the label column too): {@code VALUES} are
     * regression targets and predictions, any finite floats */
    public static final int NO_SCORE = 0, SCORE = 1, PREDICTION = 2, PROBABILITY = 3, VALUES = 4;
    /** the score column holds a row of {@code k} finite scores (an array column; {@link #foldRow}) */
    public static final int SCORE_ROW = 5;
    /** the score column holds a row of {@code k} class probabilities (multiclass {@code log_loss}, {@code brier_score},
     * calibration): {@link #SCORE_ROW}'s checks, then core's probability checks ({@link #checkProbabilities}) */
    public static final int PROBABILITY_ROW = 6;
    /** multioutput regression ({@code num_outputs} = {@code k}): the label argument is the length of the row of
     * targets, plus 0.5 where the prediction row is null (null: a null target row), and the score argument the row
     * of targets followed by the row of predictions (none for a null one), as spark_metrics/jvm.py builds them;
     * {@link #outputRow} checks both rows as core does (D entries each, finite) and the states read the 2D values
     * ({@link JvmState#updateVector}) */
    public static final int OUTPUT_ROWS = 7;
    /** core's {@code PROBABILITY_SUM_TOL} (core/inputs/formats.py): a row's sum may be off 1 by this times K */
    static final double PROBABILITY_SUM_TOL = 1e-6;
    /** core's rules of probability rows, as its messages state them */
    static final String IN_UNIT = "probabilities must be in [0, 1]", SUM_TO_ONE = "probability rows must sum to 1";

    public final String text;
    final int k;
    final int scoreMode;
    final boolean weighted;
    final String labelName, scoreName, weightName, labelRule, scoreRule, weightRule;
    final String[] kinds, configs;

    public Spec(String text) {
        this.text = text;
        String[] f = text.split("\u001f", -1);
        k = Integer.parseInt(f[0]);
        scoreMode = Integer.parseInt(f[1]);
        weighted = f[2].equals("1");
        labelName = f[3];
        scoreName = f[4];
        weightName = f[5];
        labelRule = f[6];
        scoreRule = f[7];
        weightRule = f[8];
        int n = Integer.parseInt(f[9]);
        kinds = new String[n];
        configs = new String[n];
        for (int i = 0; i < n; i++) {
            kinds[i] = f[10 + 2 * i];
            configs[i] = f[11 + 2 * i];
        }
    }

    public JvmState[] zero() {
        JvmState[] out = new JvmState[kinds.length];
        for (int i = 0; i < out.length; i++) out[i] = States.create(kinds[i], configs[i]);
        return out;
    }

    static String show(double v) {
        if (Double.isNaN(v)) return "nan";
        if (Double.isInfinite(v)) return v > 0 ? "inf" : "-inf";
        return Double.toString(v);
    }

    static IllegalArgumentException invalid(String column, String value, String rule) {
        return new IllegalArgumentException("column '" + column + "': invalid value " + value + " in a row of this group: " + rule
            + " (the JVM aggregates do not see row positions: mergeable_metrics.spark.compute_metrics(..., native=False) names the row and its partition)");
    }

    /** The checked label of one row (null: a boxed null). */
    double label(Double v) {
        if (v == null) throw invalid(labelName, "null", labelRule);
        if (scoreMode == VALUES ? !Double.isFinite(v) : !CountState.isClass(v, k)) throw invalid(labelName, show(v), labelRule + (scoreMode == VALUES ? "" : otherNames(v)));
        return v;
    }

    /** How to read two classes named by other whole numbers (-1 / 1, 1 / 2): the JVM path reads 0 / 1 only. */
    String otherNames(double v) {
        if (k != 2 || !Double.isFinite(v) || v != Math.rint(v)) return "";
        return "; for two classes named otherwise (e.g. -1 and 1, or 1 and 2) map them to 0 and 1 first: (F.col('" + labelName
            + "') == POSITIVE).cast('int'), in SQL CAST(" + labelName + " = POSITIVE AS INT)";
    }

    double score(Double v) {
        if (scoreMode == NO_SCORE) return 0.0;
        if (v == null) throw invalid(scoreName, "null", scoreRule);
        boolean bad;
        if (scoreMode == SCORE || scoreMode == VALUES) bad = !Double.isFinite(v);
        else if (scoreMode == PROBABILITY) bad = !(v >= 0.0 && v <= 1.0);
        else bad = !CountState.isClass(v, k);
        if (bad) throw invalid(scoreName, show(v), scoreRule);
        return v;
    }

    double weight(Double v) {
        if (!weighted) return 1.0;
        if (v == null) throw invalid(weightName, "null", weightRule);
        if (!Double.isFinite(v) || v < 0) throw invalid(weightName, show(v), weightRule);
        return v;
    }

    /** Fold one row into every state (after the checks, in Python's order: label, score, weight). */
    public void fold(JvmState[] states, Double label, Double score, Double weight) {
        double y = label(label), s = score(score), w = weight(weight);
        for (JvmState st : states) st.update(y, s, w);
    }

    /** Whether the score column holds rows of {@code k} scores ({@link #SCORE_ROW}, {@link #PROBABILITY_ROW}). */
    public boolean rows() {
        return scoreMode == SCORE_ROW || scoreMode == PROBABILITY_ROW || scoreMode == OUTPUT_ROWS;
    }

    /** The doubles a checked row's score part holds: {@code k}, or {@code 2k} for {@link #OUTPUT_ROWS}. */
    int rowWidth() {
        return scoreMode == OUTPUT_ROWS ? 2 * k : k;
    }

    private String outputRule(String role) {
        return "multioutput " + role + " rows are lists of " + k + " values (num_outputs=" + k + ")";
    }

    /** The checked values of one {@link #OUTPUT_ROWS} row (the D targets, then the D predictions): {@code size} the
     * length of the target row plus 0.5 for a null prediction row (null: a null target row), {@code v} the target row
     * followed by the prediction row. Checks in core's order: the target row's length and values, then the
     * prediction row's. */
    public double[] outputRow(Double size, java.util.List<?> v) {
        if (size == null) throw invalid(labelName, "null", outputRule("target"));
        int n = (int) Math.floor(size);
        boolean nullPrediction = size != n;
        if (n != k) throw invalid(labelName, "a row of " + n + " entries", outputRule("target"));
        double[] out = new double[2 * k];
        for (int i = 0; i < k; i++) out[i] = entry(v.get(i), i, labelName, labelRule);
        if (nullPrediction) throw invalid(scoreName, "null", outputRule("prediction"));
        if (v.size() - k != k) throw invalid(scoreName, "a row of " + (v.size() - k) + " entries", outputRule("prediction"));
        for (int i = 0; i < k; i++) out[k + i] = entry(v.get(k + i), i, scoreName, scoreRule);
        return out;
    }

    private static double entry(Object x, int i, String column, String rule) {
        if (x == null) throw invalid(column, "null (entry " + i + ")", rule);
        double d = ((Number) x).doubleValue();
        if (!Double.isFinite(d)) throw invalid(column, show(d) + " (entry " + i + ")", rule);
        return d;
    }

    /** The checked score row of one row ({@link #SCORE_ROW}: {@code k} finite doubles; {@link #PROBABILITY_ROW}:
     * probabilities too, {@link #checkProbabilities}; null: a null row). */
    public double[] scoreRow(java.util.List<?> v) {
        if (v == null) throw invalid(scoreName, "null", scoreRule);
        if (v.size() != k) throw invalid(scoreName, "a row of " + v.size() + " entries", "score rows need " + k + " entries per row (num_classes)");
        double[] out = new double[k];
        for (int i = 0; i < k; i++) {
            Object x = v.get(i);
            if (x == null) throw invalid(scoreName, "null (entry " + i + ")", scoreRule);
            double d = ((Number) x).doubleValue();
            if (!Double.isFinite(d)) throw invalid(scoreName, show(d) + " (entry " + i + ")", scoreRule);
            out[i] = d;
        }
        if (scoreMode == PROBABILITY_ROW) checkProbabilities(out);
        return out;
    }

    /**
     * core's {@code check_probabilities} of one row of finite values (core/inputs/formats.py), the same decisions bit
     * for bit: every entry in [0, 1] (the first entry outside is named), then the row's numpy sum ({@code 0 +}
     * numpy's pairwise sum, {@link Finish#pairwise}: what {@code vals.sum(axis=1)} computes per row of a C-ordered
     * matrix) off 1 by at most {@code PROBABILITY_SUM_TOL * K}; the value named as core names it (the row rounded to 6
     * decimals as {@code np.round}, its first 7 entries beyond 8; the sum as Python's {@code :.6g}).
     */
    void checkProbabilities(double[] p) {
        for (int i = 0; i < p.length; i++)
            if (p[i] < 0 || p[i] > 1) throw invalid(scoreName, PyText.repr(p[i]) + " (entry " + i + ")", IN_UNIT);
        double sum = 0.0 + Finish.pairwise(p, 0, p.length);
        if (Math.abs(sum - 1) > PROBABILITY_SUM_TOL * Math.max(p.length, 1))
            throw invalid(scoreName, PyText.roundedRow(p), SUM_TO_ONE + " (got " + PyText.g6(sum) + ")");
    }

    /** Fold one row whose score is a row of {@code k} scores ({@link #SCORE_ROW}; checks in Python's order: label,
     * scores, weight): count kinds take the row as a label (their cell does not read the score), the others the
     * score row ({@link JvmState#updateVector}). */
    public void foldRow(JvmState[] states, Double label, java.util.List<?> scores, Double weight) {
        if (scoreMode == OUTPUT_ROWS) {
            double[] s = outputRow(label, scores);
            foldChecked(states, 0.0, s, weight(weight));
            return;
        }
        double y = label(label);
        double[] s = scoreRow(scores);
        double w = weight(weight);
        foldChecked(states, y, s, w);
    }

    /** {@link #foldRow} of a checked row. */
    static void foldChecked(JvmState[] states, double y, double[] s, double w) {
        for (JvmState st : states) {
            if (st instanceof CountState) st.update(y, 0.0, w);
            else st.updateVector(y, s, w);
        }
    }

    /** The states' bytes, each with a u32 little-endian length before it. */
    public static byte[] pack(JvmState[] states) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (JvmState s : states) {
            byte[] b = s.toBytes();
            for (int i = 0; i < 4; i++) out.write((b.length >>> (8 * i)) & 0xFF);
            out.writeBytes(b);
        }
        return out.toByteArray();
    }

    public static void mergeInto(JvmState[] a, JvmState[] b) {
        for (int i = 0; i < a.length; i++) a[i].merge(b[i]);
    }
}

package mergeablemetrics;

import org.apache.spark.sql.api.java.UDF2;
import org.apache.spark.sql.api.java.UDF3;

/** The count kinds' fold lowered to Spark's own aggregates (issue 26, round 6): each state's counts are SQL sums of
 * per-row indicators (code-generated, partially aggregated, no object per row; for binary_confusion since round 7
 * one comparison per sum, see {@link Pack}), and the per-state cell counts are packed into the states' bytes by
 * {@link Pack}, the same bytes as
 * {@link StateAggregator} folding the same rows. Rows the SQL fast-path condition does not accept (invalid
 * values, nulls) fail in {@link Check} with {@link Spec}'s error. Unweighted specs of count kinds only. */
public final class CountCells {
    private CountCells() {}

    /** {@code mm_count_check(spec, label, score)}: called on the rows the SQL fast-path condition refuses, which are
     * exactly the invalid ones (nulls, NaN, labels and scores out of range): throws {@link Spec}'s error for the row,
     * as the aggregate does. A row that passes the Java checks here would mean the SQL condition and the Java checks
     * disagree: that throws too (never a silently dropped row). */
    public static final class Check implements UDF3<String, Double, Double, Integer> {
        private static final long serialVersionUID = 1L;
        private transient String lastText;
        private transient Spec lastSpec;

        @Override
        public Integer call(String text, Double label, Double score) {
            if (!text.equals(lastText)) {
                lastSpec = new Spec(text);
                lastText = text;
            }
            lastSpec.label(label);
            lastSpec.score(score);
            lastSpec.weight(null);
            throw new IllegalStateException("mergeable_metrics: the SQL count fold refused a row the Java checks accept (label " + label + ", score " + score
                + "): please report it; mergeable_metrics.spark.jvm.NATIVE_COUNTS = False folds with the typed Aggregator");
        }
    }

    /** {@code mm_pack_cells(spec, sums)}: the states' bytes ({@link Spec#pack}) from the SQL sums of
     * spark_metrics/jvm.py {@code count_cells_column} (null sums: no rows): {@code sums(0)} the check aggregate's,
     * {@code sums(1)} the row count, then per state in order: {@link ExampleCount} the row count;
     * {@link ConfusionMatrix} its cell counts; {@link BinaryConfusion} at T sorted thresholds, the rows of label 1,
     * then per threshold the rows passing it and the rows of label 1 passing it (issue 26 round 7), whose
     * differences are its cell counts. */
    public static final class Pack implements UDF2<String, scala.collection.Seq<Object>, byte[]> {
        private static final long serialVersionUID = 1L;

        private static long at(scala.collection.Seq<Object> sums, int i) {
            Object v = sums.apply(i);
            return v == null ? 0L : ((Number) v).longValue();
        }

        @Override
        public byte[] call(String text, scala.collection.Seq<Object> sums) {
            JvmState[] states = new Spec(text).zero();
            long rows = at(sums, 1);
            int at = 2;
            for (JvmState st : states) {
                CountState c = (CountState) st;
                long[] part = new long[c.counts.length];
                if (c instanceof BinaryConfusion) {
                    // b[y][j]: rows of label y passing at least j thresholds (b[y][0] every row of label y; b[y][T + 1] = 0)
                    int t1 = part.length / 2;
                    long[][] b = new long[2][t1 + 1];
                    b[1][0] = at(sums, at++);
                    b[0][0] = rows - b[1][0];
                    for (int j = 1; j < t1; j++) {
                        long passing = at(sums, at++);
                        b[1][j] = at(sums, at++);
                        b[0][j] = passing - b[1][j];
                    }
                    for (int y = 0; y < 2; y++) {
                        for (int j = 0; j < t1; j++) {
                            part[y * t1 + j] = b[y][j] - b[y][j + 1];
                            if (part[y * t1 + j] < 0) throw new IllegalStateException("mm_pack_cells: inconsistent threshold sums (thresholds not sorted?) " + sums);
                        }
                    }
                } else if (c instanceof ExampleCount) {
                    part[0] = at(sums, at++);
                } else {
                    for (int i = 0; i < part.length; i++) part[i] = at(sums, at++);
                }
                c.addCells(part);
            }
            if (at != sums.length()) throw new IllegalArgumentException("mm_pack_cells: " + sums.length() + " sums for states of " + at);
            return Spec.pack(states);
        }
    }
}

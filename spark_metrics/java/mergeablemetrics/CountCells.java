package mergeablemetrics;

import org.apache.spark.sql.api.java.UDF2;
import org.apache.spark.sql.api.java.UDF3;

/** The count kinds' fold lowered to Spark's own aggregates (issue 26, round 6): each state's cell of a row is a SQL
 * expression and its counts are SQL sums (code-generated, partially aggregated, no object per row), and the
 * per-state cell counts are packed into the states' bytes by {@link Pack}, the same bytes as
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

    /** {@code mm_pack_cells(spec, cells)}: the states' bytes ({@link Spec#pack}) from every state's cell counts in
     * order (null: no rows). */
    public static final class Pack implements UDF2<String, scala.collection.Seq<Object>, byte[]> {
        private static final long serialVersionUID = 1L;

        @Override
        public byte[] call(String text, scala.collection.Seq<Object> cells) {
            JvmState[] states = new Spec(text).zero();
            int at = 1; // cells(0): the check aggregate's (null)
            for (JvmState st : states) {
                CountState c = (CountState) st;
                long[] part = new long[c.counts.length];
                for (int i = 0; i < part.length; i++) {
                    Object v = cells.apply(at++);
                    part[i] = v == null ? 0L : ((Number) v).longValue();
                }
                c.addCells(part);
            }
            if (at != cells.length()) throw new IllegalArgumentException("mm_pack_cells: " + cells.length() + " cells for states of " + at);
            return Spec.pack(states);
        }
    }
}

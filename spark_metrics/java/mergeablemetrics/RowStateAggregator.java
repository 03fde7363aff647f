package mergeablemetrics;

import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.expressions.Aggregator;

/** The typed Aggregator of a {@link Spec} whose score column holds score rows ({@link Spec#SCORE_ROW}, {@link Spec#PROBABILITY_ROW}: an
 * {@code array<double>} of the task's K classes, e.g. multiclass {@code roc_auc} one-vs-rest): folds rows
 * (label, scores, [weight]) as {@link StateAggregator} folds scalar rows; the output is the states' bytes. */
public final class RowStateAggregator extends Aggregator<Row, StateAggregator.Buffer, byte[]> {
    private static final long serialVersionUID = 1L;
    private final Spec spec;

    public RowStateAggregator(String spec) {
        this.spec = new Spec(spec);
        if (!this.spec.rows()) throw new IllegalArgumentException("RowStateAggregator folds rows (Spec.SCORE_ROW, Spec.PROBABILITY_ROW, Spec.OUTPUT_ROWS)");
    }

    @Override
    public StateAggregator.Buffer zero() {
        StateAggregator.Buffer b = new StateAggregator.Buffer();
        b.states = spec.zero();
        return b;
    }

    @Override
    public StateAggregator.Buffer reduce(StateAggregator.Buffer b, Row row) {
        spec.foldRow(b.states, row.isNullAt(0) ? null : row.getDouble(0), row.isNullAt(1) ? null : row.getList(1),
            spec.weighted ? (row.isNullAt(2) ? null : row.getDouble(2)) : null);
        return b;
    }

    @Override
    public StateAggregator.Buffer merge(StateAggregator.Buffer a, StateAggregator.Buffer b) {
        Spec.mergeInto(a.states, b.states);
        return a;
    }

    @Override
    public byte[] finish(StateAggregator.Buffer b) {
        return Spec.pack(b.states);
    }

    @Override
    public Encoder<StateAggregator.Buffer> bufferEncoder() {
        return Encoders.javaSerialization(StateAggregator.Buffer.class);
    }

    @Override
    public Encoder<byte[]> outputEncoder() {
        return Encoders.BINARY();
    }
}

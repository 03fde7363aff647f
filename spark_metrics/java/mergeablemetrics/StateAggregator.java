package mergeablemetrics;

import java.io.Serializable;
import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.expressions.Aggregator;

/** The typed Aggregator (classic Spark, registered with {@code functions.udaf}): folds rows
 * (label, [score], [weight]) into the states of a {@link Spec}; partial buffers merge in the shuffle;
 * the output is the states' bytes (see {@link Spec#pack}). */
public final class StateAggregator extends Aggregator<Row, StateAggregator.Buffer, byte[]> {
    private static final long serialVersionUID = 1L;

    /** The aggregation buffer: the states of one group. */
    public static final class Buffer implements Serializable {
        private static final long serialVersionUID = 1L;
        public JvmState[] states;

        public Buffer() {}

        Buffer(JvmState[] states) {
            this.states = states;
        }
    }

    private final Spec spec;
    private final int scoreAt, weightAt;

    public StateAggregator(String spec) {
        this.spec = new Spec(spec);
        this.scoreAt = this.spec.scoreMode == Spec.NO_SCORE ? -1 : 1;
        this.weightAt = this.spec.weighted ? (scoreAt < 0 ? 1 : 2) : -1;
    }

    private static Double at(Row row, int i) {
        return i < 0 || row.isNullAt(i) ? null : row.getDouble(i);
    }

    @Override
    public Buffer zero() {
        return new Buffer(spec.zero());
    }

    @Override
    public Buffer reduce(Buffer b, Row row) {
        spec.fold(b.states, at(row, 0), at(row, scoreAt), at(row, weightAt));
        return b;
    }

    @Override
    public Buffer merge(Buffer a, Buffer b) {
        Spec.mergeInto(a.states, b.states);
        return a;
    }

    @Override
    public byte[] finish(Buffer b) {
        return Spec.pack(b.states);
    }

    @Override
    public Encoder<Buffer> bufferEncoder() {
        return Encoders.javaSerialization(Buffer.class);
    }

    @Override
    public Encoder<byte[]> outputEncoder() {
        return Encoders.BINARY();
    }
}

package mergeablemetrics;

import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.expressions.Aggregator;

/** A metric's value as one aggregate (the SQL names {@code mm_f1(label, score)}, ...): the states of a
 * {@link Spec} folded as {@link StateAggregator} does (score rows: as {@link RowStateAggregator}), finished in the JVM
 * by {@link Finish}. */
public final class MetricAggregator extends Aggregator<Row, StateAggregator.Buffer, Double> {
    private static final long serialVersionUID = 1L;
    private final Aggregator<Row, StateAggregator.Buffer, byte[]> states;
    private final String metric;

    public MetricAggregator(String spec, String metric) {
        this.states = new Spec(spec).rows() ? new RowStateAggregator(spec) : new StateAggregator(spec);
        this.metric = metric;
    }

    @Override
    public StateAggregator.Buffer zero() {
        return states.zero();
    }

    @Override
    public StateAggregator.Buffer reduce(StateAggregator.Buffer b, Row row) {
        return states.reduce(b, row);
    }

    @Override
    public StateAggregator.Buffer merge(StateAggregator.Buffer a, StateAggregator.Buffer b) {
        return states.merge(a, b);
    }

    @Override
    public Double finish(StateAggregator.Buffer b) {
        return Finish.value(metric, Spec.pack(b.states));
    }

    @Override
    public Encoder<StateAggregator.Buffer> bufferEncoder() {
        return states.bufferEncoder();
    }

    @Override
    public Encoder<Double> outputEncoder() {
        return Encoders.DOUBLE();
    }
}

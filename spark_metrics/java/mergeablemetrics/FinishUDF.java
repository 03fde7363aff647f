package mergeablemetrics;

import org.apache.spark.sql.api.java.UDF2;

/** {@code mm_metric(metric, states)}: one metric's value from a JVM aggregate's states ({@link Finish}), in the
 * JVM: the finish of {@code metric_columns} without Python. A no-argument class, so Spark Connect registers it
 * with {@code registerJavaFunction}. */
public final class FinishUDF implements UDF2<String, byte[], Double> {
    private static final long serialVersionUID = 1L;

    @Override
    public Double call(String metric, byte[] states) {
        return Finish.value(metric, states);
    }
}

package mergeablemetrics;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/** Registers the JVM aggregates in a classic session (called through the Py4J gateway). */
public final class Registrar {
    private Registrar() {}

    /** Register {@code name(label[, score][, weight])} folding the states of {@code spec}; returns the name. */
    public static String register(SparkSession spark, String name, String spec) {
        spark.udf().register(name, functions.udaf(new StateAggregator(spec), Encoders.row(inputSchema(spec))));
        return name;
    }

    /** Register {@code name(label[, score][, weight])} returning one metric's value ({@link MetricAggregator}). */
    public static String registerMetric(SparkSession spark, String name, String spec, String metric) {
        spark.udf().register(name, functions.udaf(new MetricAggregator(spec, metric), Encoders.row(inputSchema(spec))));
        return name;
    }

    /** Register {@code name(metric, states)}, the JVM finish ({@link FinishUDF}). */
    public static String registerFinish(SparkSession spark, String name) {
        spark.udf().register(name, new FinishUDF(), DataTypes.DoubleType);
        return name;
    }

    private static StructType inputSchema(String spec) {
        Spec s = new Spec(spec);
        List<StructField> fields = new ArrayList<>();
        fields.add(DataTypes.createStructField("label", DataTypes.DoubleType, true));
        if (s.scoreMode != Spec.NO_SCORE) fields.add(DataTypes.createStructField("score", DataTypes.DoubleType, true));
        if (s.weighted) fields.add(DataTypes.createStructField("weight", DataTypes.DoubleType, true));
        return DataTypes.createStructType(fields);
    }

    /** Register the UserDefinedAggregateFunction form (its first argument is the spec string). */
    public static String registerUdaf(SparkSession spark, String name) {
        spark.udf().register(name, new StateUDAF());
        return name;
    }
}

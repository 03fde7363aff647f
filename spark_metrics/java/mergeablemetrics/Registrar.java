package mergeablemetrics;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.analysis.FunctionRegistry;
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

    /** Register {@code name(label, scores[, weight])} folding the states of a {@link Spec#SCORE_ROW} {@code spec}
     * ({@link RowStateAggregator}: {@code scores} an {@code array<double>} of K entries); returns the name. */
    public static String registerRows(SparkSession spark, String name, String spec) {
        spark.udf().register(name, functions.udaf(new RowStateAggregator(spec), Encoders.row(rowSchema(new Spec(spec)))));
        return name;
    }

    /** (label double, scores array&lt;double&gt;[, weight double]): the input of a score-row spec. */
    private static StructType rowSchema(Spec s) {
        StructType schema = new StructType().add("label", DataTypes.DoubleType, true)
            .add("scores", DataTypes.createArrayType(DataTypes.DoubleType, true), true);
        return s.weighted ? schema.add("weight", DataTypes.DoubleType, true) : schema;
    }

    /** Register {@code name(label[, score][, weight])} returning one metric's value ({@link MetricAggregator}). */
    public static String registerMetric(SparkSession spark, String name, String spec, String metric) {
        spark.udf().register(name, functions.udaf(new MetricAggregator(spec, metric), Encoders.row(inputSchema(spec))));
        return name;
    }

    /**
     * Register {@code name(label, score[, weight])} returning one metric's value: {@code spec} folds the
     * unweighted rows, {@code weightedSpec} the weighted ones; the call's number of arguments picks one.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    public static String registerMetricWeights(SparkSession spark, String name, String spec, String weightedSpec, String metric) throws Exception {
        Object state = spark.getClass().getMethod("sessionState").invoke(spark); // classic sessions (org.apache.spark.sql.internal.SessionState)
        FunctionRegistry registry = (FunctionRegistry) state.getClass().getMethod("functionRegistry").invoke(state);
        // temporary functions live in the system catalog's session namespace (FunctionRegistryBase.createOrReplaceTempFunction)
        FunctionIdentifier id = FunctionIdentifier.apply(name, scala.Option.apply("session"), scala.Option.apply("system"));
        registerMetric(spark, name, spec, metric);
        scala.Function1 plain = registry.lookupFunctionBuilder(id).get();
        registerMetric(spark, name, weightedSpec, metric);
        scala.Function1 weighted = registry.lookupFunctionBuilder(id).get();
        scala.Function1<Object, Object> builder = children -> {
            int n = ((scala.collection.Seq<?>) children).size();
            if (n != 2 && n != 3) throw new IllegalArgumentException(name + " takes (label, score) or (label, score, weight), got " + n + " arguments");
            return (n == 3 ? weighted : plain).apply(children);
        };
        registry.createOrReplaceTempFunction(name, (scala.Function1) builder, "scala_udf");
        return name;
    }

    /** Register {@code name(metric, states)}, the JVM finish ({@link FinishUDF}). */
    public static String registerFinish(SparkSession spark, String name) {
        spark.udf().register(name, new FinishUDF(), DataTypes.DoubleType);
        return name;
    }

    private static StructType inputSchema(String spec) {
        Spec s = new Spec(spec);
        if (s.rows()) return rowSchema(s);
        List<StructField> fields = new ArrayList<>();
        fields.add(DataTypes.createStructField("label", DataTypes.DoubleType, true));
        if (s.scoreMode != Spec.NO_SCORE) fields.add(DataTypes.createStructField("score", DataTypes.DoubleType, true));
        if (s.weighted) fields.add(DataTypes.createStructField("weight", DataTypes.DoubleType, true));
        return DataTypes.createStructType(fields);
    }

    /** Register {@code checkName(spec, label, score)} and {@code packName(spec, cells)} ({@link CountCells}). */
    public static String registerCountCells(SparkSession spark, String checkName, String packName) {
        spark.udf().register(checkName, new CountCells.Check(), DataTypes.IntegerType);
        spark.udf().register(packName, new CountCells.Pack(), DataTypes.BinaryType);
        return checkName;
    }

    /** Register the UserDefinedAggregateFunction form (its first argument is the spec string). */
    public static String registerUdaf(SparkSession spark, String name) {
        spark.udf().register(name, new StateUDAF());
        return name;
    }
}

package mergeablemetrics;

/**
 * Factory of the JVM float state kinds (exact sums: probability sums, regression moments,
 * calibration bins). {@code States.create} chains here for these kinds; the Python side builds
 * {@code config} (spark_metrics/jvm_float_kinds.py).
 */
public final class FloatStates {
    private FloatStates() {}

    /** The kinds this factory makes. */
    public static final String[] KINDS = {ProbabilitySums.KIND, RegressionMoments.KIND, CalibrationBins.KIND, "score_distribution", "score_distribution_class0", ClassScoreDistribution.KIND, AbsoluteErrorDistribution.KIND, RegressionTerms.KIND};

    public static JvmState create(String kind, String config) {
        switch (kind) {
            case ProbabilitySums.KIND:
                return new ProbabilitySums(config);
            case RegressionMoments.KIND:
                return new RegressionMoments(config);
            case CalibrationBins.KIND:
                return new CalibrationBins(config);
            case "score_distribution":
            case "score_distribution_class0":
                return new ScoreDistribution(kind, config);
            case ClassScoreDistribution.KIND:
                return new ClassScoreDistribution(config);
            case AbsoluteErrorDistribution.KIND:
                return new AbsoluteErrorDistribution(config);
            case RegressionTerms.KIND:
                return new RegressionTerms(config);
            default:
                throw new IllegalArgumentException("unknown JVM float state kind " + kind);
        }
    }
}

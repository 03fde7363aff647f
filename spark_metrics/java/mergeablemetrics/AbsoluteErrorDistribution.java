package mergeablemetrics;

/**
 * {@code absolute_error_distribution} (core/metrics/regression_quantiles.py AbsoluteErrorDistributionState,
 * {@code median_absolute_error} and {@code quantile_absolute_error}): the score distribution of the rows'
 * absolute errors {@code |p - y|}, the canonical binning of {@link ScoreDistribution} (which folds them: this
 * class only maps a row to its error). Reads (label = target, score = prediction); an error that overflows
 * float64 is held at the largest finite float with label 1 ({@code pos}), the finite errors with label 0
 * ({@code neg}), as core does. Single output (multioutput layouts keep the Arrow path).
 */
public final class AbsoluteErrorDistribution implements JvmState {
    private static final long serialVersionUID = 1L;
    static final String KIND = "absolute_error_distribution";
    private final ScoreDistribution bins;

    public AbsoluteErrorDistribution(String config) {
        bins = new ScoreDistribution(KIND, config);
    }

    @Override
    public void update(double y, double p, double w) {
        FloatConfig.checkFinite(KIND, "target", y);
        FloatConfig.checkFinite(KIND, "prediction", p);
        double e = Math.abs(p - y);
        if (Double.isInfinite(e)) bins.update(1.0, Double.MAX_VALUE, w);
        else bins.update(0.0, e, w);
    }

    @Override
    public void merge(JvmState other) {
        if (!(other instanceof AbsoluteErrorDistribution)) throw new IllegalArgumentException("cannot merge " + other.getClass().getSimpleName() + " into " + KIND);
        bins.merge(((AbsoluteErrorDistribution) other).bins);
    }

    @Override
    public byte[] toBytes() {
        return bins.toBytes();
    }
}

package mergeablemetrics;

/** The libm functions the float kinds need, bit for bit as the Python core computes them. */
final class FloatMath {
    private FloatMath() {}

    /**
     * fdlibm's {@code log}: {@code StrictMath.log} is defined as it on every JVM, and core's
     * {@code mergeable_metrics._util.portable_log.log} is the same algorithm (not {@code Math.log},
     * whose intrinsic may differ in the last bit).
     */
    static double log(double x) {
        return StrictMath.log(x);
    }
}

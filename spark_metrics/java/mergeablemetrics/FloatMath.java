package mergeablemetrics;

/** The libm functions the float kinds need, as the Python core computes them (numpy). */
final class FloatMath {
    private FloatMath() {}

    static double log(double x) {
        return Math.log(x);
    }
}

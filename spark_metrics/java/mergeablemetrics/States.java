package mergeablemetrics;

/** The factory of the JVM states: {@code create(kind, config)} (kind as core's {@code State.kind}). */
public final class States {
    private States() {}

    public static JvmState create(String kind, String config) {
        switch (kind) {
            // --- count kinds (sums of per-row cells) ---
            case "binary_confusion":
                return new BinaryConfusion(config);
            case "confusion_matrix":
                return new ConfusionMatrix(config);
            case "example_count":
                return new ExampleCount(config);
            // --- float / exact-sum kinds (FloatStates) ---
            default:
                return FloatStates.create(kind, config);
        }
    }
}

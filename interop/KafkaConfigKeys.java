import java.util.Map;

import kafka.server.KafkaConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.storage.internals.log.LogConfig;

/**
 * Every config key of Kafka's broker (KafkaConfig's ConfigDef) and of its topics
 * (LogConfig), for kt's oracle test: one line per key, tab-separated,
 * "broker|topic NAME TYPE DEFAULT", the default as ConfigDef.convertToString prints it
 * ("<none>" for a key without a default, "null" for a null default).
 * Run with Kafka's jars on the class path: java -cp 'libs/*' KafkaConfigKeys.java
 */
public class KafkaConfigKeys {
    public static void main(String[] args) {
        print("broker", KafkaConfig.configDef().configKeys());
        print("topic", LogConfig.configKeys());
    }

    private static void print(String scope, Map<String, ConfigDef.ConfigKey> keys) {
        for (ConfigDef.ConfigKey key : keys.values()) {
            String shown;
            if (key.defaultValue == ConfigDef.NO_DEFAULT_VALUE) {
                shown = "<none>";
            } else if (key.defaultValue == null) {
                shown = "null";
            } else {
                shown = ConfigDef.convertToString(key.defaultValue, key.type);
            }
            System.out.println(scope + "\t" + key.name + "\t" + key.type + "\t" + shown);
        }
    }
}

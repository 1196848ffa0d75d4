// A Kafka Streams 4 word count on the streams rebalance protocol (KIP-1071,
// group.protocol=streams), for the oracle of streams groups: reads lines from INPUT,
// repartitions them by word, counts the words in a state store (backed by a changelog
// topic), writes each new count to OUTPUT. It prints "state STATE" on every change of
// the application's state, and runs until it is killed or STOP_FILE exists (then it
// closes, leaving the group, and prints "closed").
//
//   java -cp "$KAFKA4/libs/*:$KAFKA4/streams/*" interop/StreamsGroupWordCount.java \
//       BOOTSTRAP APPLICATION_ID INPUT OUTPUT STATE_DIR GUARANTEE STANDBYS STOP_FILE
//
// GUARANTEE is at_least_once or exactly_once_v2; STANDBYS num.standby.replicas.
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Properties;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Produced;

public class StreamsGroupWordCount {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args[5]);
        props.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, Integer.parseInt(args[6]));
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        Path stop = Path.of(args[7]);

        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(args[2])
            .flatMapValues(line -> Arrays.asList(line.split(" ")))
            .groupBy((key, word) -> word)
            .count()
            .toStream()
            .to(args[3], Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setStateListener((now, before) -> System.out.println("state " + now));
        streams.setUncaughtExceptionHandler(e -> {
            e.printStackTrace();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler
                .StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();
        while (!Files.exists(stop)) {
            Thread.sleep(100);
        }
        streams.close(Duration.ofSeconds(30));
        System.out.println("closed");
    }
}

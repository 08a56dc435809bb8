// A Kafka Streams application on group.protocol=streams whose topology is picked by an argument, so two instances
// of one application.id can run different topologies (a rolling restart with a changed topology). Compiled at test
// time with javac against the cached Kafka jars (tests/integration/lag/test_streams_topology_change.py).
//
// Usage: TopologyVariant <properties file> <source topic> <stateless|counting>
//   stateless: reads the source topic and drops every record (one sub-topology, no internal topic);
//   counting:  counts the records per key (the same sub-topology plus a state store and its changelog topic).
// It prints each state change ("STATE OLD -> NEW") and exits with 1 once the client is in ERROR, so a refused
// instance ends on its own.

import java.io.FileInputStream;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;

public final class TopologyVariant {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        try (FileInputStream in = new FileInputStream(args[0])) {
            props.load(in);
        }
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> input = builder.stream(args[1], Consumed.with(Serdes.String(), Serdes.String()));
        if (args[2].equals("counting")) {
            input.groupByKey().count();
        } else {
            input.foreach((key, value) -> { });
        }
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch ended = new CountDownLatch(1);
        boolean[] failed = {false};
        streams.setStateListener((now, before) -> {
            System.out.println("STATE " + before + " -> " + now);
            System.out.flush();
            if (now == KafkaStreams.State.ERROR) {
                failed[0] = true;
                ended.countDown();
            } else if (now == KafkaStreams.State.NOT_RUNNING) {
                ended.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(exc -> {
            System.out.println("FATAL " + exc);
            System.out.flush();
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> streams.close(Duration.ofSeconds(20))));
        streams.start();
        ended.await();
        streams.close(Duration.ofSeconds(20));
        System.exit(failed[0] ? 1 : 0);
    }
}

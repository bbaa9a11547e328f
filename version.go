package orderly

// Version is Orderly's version; nodes advertise it to the cluster.
const Version = "0.1.0"

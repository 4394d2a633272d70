# Shared by bin/strata and bin/test: finds a JDK >= 25 and Maven, or says what to install.
# Sourced, not executed. Sets STRATA_HOME, JAVA_HOME, STRATA_JAVA, STRATA_MVN.

STRATA_HOME="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
STRATA_MIN_JAVA=25

strata_java_major() { # prints the major version of the java binary $1, or nothing
  "$1" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = \([0-9]*\).*/\1/p' | head -n 1
}

strata_find_jdk() {
  local candidate major
  for candidate in "${JAVA_HOME:-}" /usr/lib/jvm/*; do
    [ -n "$candidate" ] && [ -x "$candidate/bin/java" ] && [ -x "$candidate/bin/javac" ] || continue
    major="$(strata_java_major "$candidate/bin/java")"
    if [ -n "$major" ] && [ "$major" -ge "$STRATA_MIN_JAVA" ]; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

if ! JAVA_HOME="$(strata_find_jdk)"; then
  echo "strata: no JDK ${STRATA_MIN_JAVA} or newer found (looked at JAVA_HOME='${JAVA_HOME:-}' and /usr/lib/jvm/*)." >&2
  echo "strata: install one, e.g. 'apt-get install temurin-25-jdk' (Adoptium's apt repository) or unpack" >&2
  echo "strata: a JDK 25 build under /usr/lib/jvm, or point JAVA_HOME at it." >&2
  exit 3
fi
export JAVA_HOME
STRATA_JAVA="$JAVA_HOME/bin/java"

if command -v mvn >/dev/null 2>&1; then
  STRATA_MVN="$(command -v mvn)"
else
  echo "strata: Maven (mvn) not found on PATH; Strata builds with Maven 3.8 or newer." >&2
  echo "strata: install it with 'apt-get install maven' or from maven.apache.org, then re-run." >&2
  exit 3
fi
export MAVEN_OPTS="${MAVEN_OPTS:-} --sun-misc-unsafe-memory-access=allow"

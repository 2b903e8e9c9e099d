// Package dynamotest finds a DynamoDB-compatible server for tests: the
// endpoint in IDEM_DYNAMO_URL, or else a dynalite (an npm package, an
// in-memory DynamoDB emulator on Node.js) that it starts on a free
// loopback port and stops at Stop. dynalite is looked for in
// IDEM_DYNALITE (a path to its executable), then in
// $HOME/.cache/idembench/dynalite/node_modules/.bin/dynalite (where
// .ci/run installs it: npm install --prefix $HOME/.cache/idembench/dynalite
// dynalite), then on PATH. When neither works the test is skipped with a
// message, or fails when IDEM_REQUIRE_BACKENDS=1.
//
// What dynalite does not emulate, and so what these tests do not cover:
// TTL deletion (it has no TTL API; the store never relies on deletion),
// ReturnValuesOnConditionCheckFailure (the store then reads the item
// again, one more request than on DynamoDB), throttling and
// ProvisionedThroughputExceeded, transactions, global tables and their
// last-writer-wins replication, and DynamoDB's exact capacity accounting
// for refused conditional writes.
package dynamotest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Environment variables the package reads.
const (
	URLEnv      = "IDEM_DYNAMO_URL"
	BinEnv      = "IDEM_DYNALITE"
	RequireEnv  = "IDEM_REQUIRE_BACKENDS"
	cacheSubdir = ".cache/idembench/dynalite/node_modules/.bin/dynalite"
)

var server struct {
	once sync.Once
	url  string
	cmd  *exec.Cmd
	err  error
}

// URL returns the endpoint of a DynamoDB-compatible server, starting
// dynalite on first use when IDEM_DYNAMO_URL is not set.
func URL(t testing.TB) string {
	t.Helper()
	if u := os.Getenv(URLEnv); u != "" {
		return u
	}
	server.once.Do(func() { server.url, server.cmd, server.err = startDynalite() })
	if server.err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("backend required (%s=1) but unavailable: %v", RequireEnv, server.err)
		}
		t.Skipf("skipping: %v (set %s, or install dynalite: npm install --prefix $HOME/.cache/idembench/dynalite dynalite)", server.err, URLEnv)
	}
	return server.url
}

// Stop ends the dynalite URL started, if any, by its process id. Call it
// from TestMain after m.Run.
func Stop() {
	if server.cmd != nil && server.cmd.Process != nil {
		_ = server.cmd.Process.Kill()
		_ = server.cmd.Wait()
	}
}

// Client returns a client for the server at url with dummy credentials
// (emulators accept any) and enough connections for parallel tests.
func Client(url string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(url),
		Credentials:  credentials.NewStaticCredentialsProvider("idem", "idem", ""),
		HTTPClient: &http.Client{Transport: &http.Transport{
			MaxIdleConns: 128, MaxIdleConnsPerHost: 128, IdleConnTimeout: 30 * time.Second,
		}},
	})
}

// UniqueTable returns a table name no other test uses.
func UniqueTable(t testing.TB) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "idem_test_" + hex.EncodeToString(b[:])
}

// findDynalite returns the path of the dynalite executable.
func findDynalite() (string, error) {
	if p := os.Getenv(BinEnv); p != "" {
		return p, nil
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, cacheSubdir)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("dynalite"); err == nil {
		return p, nil
	}
	return "", errors.New(URLEnv + " is not set and dynalite is not installed")
}

// abortGuard is a node preload script: it keeps dynalite running when a
// client aborts a request, and lets every other error end it.
const abortGuard = `process.on('uncaughtException', (e) => {
  if (e && (e.code === 'ECONNRESET' || e.message === 'aborted')) return;
  console.error(e);
  process.exit(1);
});
`

// writeGuard writes abortGuard to a temporary file and returns its path.
func writeGuard() (string, error) {
	f, err := os.CreateTemp("", "dynalite-guard-*.js")
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.WriteString(abortGuard); err != nil {
		return "", err
	}
	return f.Name(), nil
}

// startDynalite starts dynalite on a free loopback port and waits until it
// accepts connections.
func startDynalite() (string, *exec.Cmd, error) {
	bin, err := findDynalite()
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	ln.Close()
	args := []string{"--host", "127.0.0.1", "--port", port, "--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0"}
	cmd := exec.Command(bin, args...)
	if js, err := filepath.EvalSymlinks(bin); err == nil && strings.HasSuffix(js, ".js") {
		// dynalite exits on a request its client aborted (an unhandled
		// ECONNRESET), which a cancelled context does; run it under node
		// with a handler that ignores exactly that.
		guard, err := writeGuard()
		if err != nil {
			return "", nil, err
		}
		cmd = exec.Command("node", append([]string{"--require", guard, js}, args...)...)
	}
	cmd.SysProcAttr = sysProcAttr()
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start dynalite %s: %w", bin, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return "http://" + addr, cmd, nil
		}
		select {
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return "", nil, fmt.Errorf("dynalite did not listen on %s within 20s: %w", addr, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

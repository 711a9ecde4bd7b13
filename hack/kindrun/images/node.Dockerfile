# The kind node image, built offline. It follows kind's own base recipe (images/base of
# sigs.k8s.io/kind, whose files/ hack/kindrun copies from the Go module cache into this build
# context) on a Debian bookworm base made with debootstrap. Where kind builds containerd, runc,
# crictl and the CNI plugins from source, this uses Debian's packages (containerd 1.6, runc 1.1,
# containernetworking-plugins 1.1), which kubelet v1.37.0 runs with; kubelet, kubeadm and kubectl
# are built from k8s.io/kubernetes by hack/install-tools.sh.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
COPY files/usr/local/bin/ /usr/local/bin/
COPY files/kind/ /kind/
COPY files/LICENSES/ /LICENSES/
# kind copies its scripts with --chmod=0755 (BuildKit only); the module cache keeps them 0444.
RUN chmod 0755 /kind /kind/bin /kind/bin/* /usr/local/bin/* \
    && DEBIAN_FRONTEND=noninteractive clean-install \
      systemd \
      conntrack iptables nftables iproute2 ethtool util-linux mount kmod \
      libseccomp2 pigz fuse-overlayfs \
      nfs-common open-iscsi \
      e2fsprogs \
      bash ca-certificates curl jq procps \
      containerd runc containernetworking-plugins \
    && find /lib/systemd/system/sysinit.target.wants/ -name "systemd-tmpfiles-setup.service" -delete \
    && rm -f /lib/systemd/system/multi-user.target.wants/* \
    && rm -f /etc/systemd/system/*.wants/* \
    && rm -f /lib/systemd/system/local-fs.target.wants/* \
    && rm -f /lib/systemd/system/sockets.target.wants/*udev* \
    && rm -f /lib/systemd/system/sockets.target.wants/*initctl* \
    && rm -f /lib/systemd/system/basic.target.wants/* \
    && echo "ReadKMsg=no" >> /etc/systemd/journald.conf \
    && ln -sf /usr/lib/systemd/systemd /sbin/init
# kind's /etc (containerd config, units, sysctls) after the packages, so that Debian's containerd
# does not stop at a changed conffile.
COPY files/etc/ /etc/
# kind's units and scripts expect containerd in /usr/local/bin and the CNI plugins in /opt/cni/bin.
RUN ln -sf /usr/bin/containerd /usr/local/bin/containerd \
    && ln -sf /usr/bin/containerd-shim-runc-v2 /usr/local/bin/containerd-shim-runc-v2 \
    && ln -sf /usr/bin/ctr /usr/local/bin/ctr \
    && mkdir -p /opt/cni/bin && for f in /usr/lib/cni/*; do ln -sf "$f" /opt/cni/bin/; done \
    && ctr oci spec \
        | jq '.hooks.createContainer[.hooks.createContainer| length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' \
        | jq 'del(.process.rlimits)' \
        > /etc/containerd/cri-base.json \
    && systemctl enable kubelet.service \
    && systemctl enable containerd.service \
    && systemctl enable undo-mount-hacks.service \
    && systemctl mask systemd-binfmt.service \
    && mkdir -p /etc/kubernetes/manifests
# The sandbox image is the pause image built here. restrict_oom_score_adj is true only where the
# machine lacks CAP_SYS_RESOURCE (an environment workaround; see docs/kind.md).
ARG SANDBOX_IMAGE
ARG RESTRICT_OOM_SCORE_ADJ=false
RUN sed -i \
      -e "s|sandbox_image = .*|sandbox_image = \"${SANDBOX_IMAGE}\"|" \
      -e "s|restrict_oom_score_adj = .*|restrict_oom_score_adj = ${RESTRICT_OOM_SCORE_ADJ}|" \
      /etc/containerd/config.toml \
    && grep -q "${SANDBOX_IMAGE}" /etc/containerd/config.toml
COPY bin/ /usr/bin/
COPY version /kind/version
# One node, one static bridge network: kind's default CNI (kindnetd) has no module on the proxy.
COPY 10-poolparity-bridge.conflist /etc/cni/net.d/
ENV container=docker
STOPSIGNAL SIGRTMIN+3
ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]

# Horizon pluggable settings (copied into openstack_dashboard/local/enabled/ by
# scripts/install-test-deps): with no compute service the Project dashboard has nothing to show
# and its home page answers "not authorized", so an identity-only Horizon opens on Identity.
DASHBOARD = "identity"
DEFAULT = True
